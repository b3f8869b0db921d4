"""The library's layering (docs/architecture.md): `dptradeoff.config` sits above the packages it
imports (problems, release, study, ...), and the command-line entry points that read a config sit
above it, in `dptradeoff.cli`. No module of a package that config imports, directly or through
others, imports config back, whether at the top of the file or inside a function: such an import
runs back up the layers (as `release/cli.py` once did).

The check is static: every module under src/dptradeoff is parsed (ast), not imported."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

SRC = REPO / "src"
CONFIG = "dptradeoff.config"


def _module_names() -> dict[str, Path]:
    """Every module and package of the library by dotted name (namespace packages have no file)."""
    names = {}
    for path in sorted((SRC / "dptradeoff").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        for depth in range(1, len(parts) - 1):
            names.setdefault(".".join(parts[:depth]), None)
    return names


MODULES = _module_names()


def _with_parents(name: str) -> set[str]:
    """A module and the packages whose `__init__` importing it runs."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(MODULES)


def imports(name: str, source: str, is_package: bool) -> dict[str, int]:
    """{library module: line} of every import in `source`, the module `name`'s text, anywhere in it."""
    found = {}
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[:len(base) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            for imported in _with_parents(target):
                found.setdefault(imported, node.lineno)
    found.pop(name, None)
    return found


def _graph() -> dict[str, dict[str, int]]:
    return {name: imports(name, path.read_text(), path.name == "__init__.py") if path else {}
            for name, path in MODULES.items()}


def below_config(graph: dict[str, dict[str, int]]) -> set[str]:
    """The modules of every package (and the top-level modules) that config imports, transitively."""
    reached, todo = set(), [CONFIG]
    while todo:
        for imported in graph[todo.pop()]:
            if imported not in reached:
                reached.add(imported)
                todo.append(imported)
    units = {".".join(name.split(".")[:2]) for name in reached if name.count(".") >= 1} - {CONFIG}
    return {name for name in graph if ".".join(name.split(".")[:2]) in units}


def test_the_scanner_resolves_relative_imports_inside_functions_to_modules_and_their_packages():
    source = "def f():\n    from ..config import load\n    from . import run, settings\n"
    found = imports("dptradeoff.release.cli", source, is_package=False)
    assert found == {"dptradeoff": 2, CONFIG: 2, "dptradeoff.release.run": 3, "dptradeoff.release.settings": 3}


def test_config_reaches_the_packages_it_checks_with():
    below = below_config(_graph())
    assert {"dptradeoff.problems.registry", "dptradeoff.release.settings", "dptradeoff.release.run",
            "dptradeoff.study"} <= below
    assert not below & {"dptradeoff.cli.release", "dptradeoff.cli.front", "dptradeoff.__main__", CONFIG}


@pytest.mark.parametrize("package", ["dptradeoff.release", "dptradeoff.problems"])
def test_a_back_import_of_config_would_be_found(package):
    graph = _graph()
    graph[f"{package}.cli"] = imports(f"{package}.cli", "from ..config import load\n", is_package=False)
    assert f"{package}.cli" in below_config(graph)


def test_no_module_below_config_imports_config():
    graph = _graph()
    back = sorted(f"{MODULES[name].relative_to(REPO)}:{graph[name][CONFIG]}" for name in below_config(graph)
                  if CONFIG in graph[name])
    assert not back, (f"these modules sit in packages that dptradeoff.config imports, yet import config back: "
                      f"{', '.join(back)}; move them above config (src/dptradeoff/cli/, docs/architecture.md)")


# The chain (`dptradeoff.bo`) is a layer above what summarises fronts and releases: the Pareto utilities
# both use live in `dptradeoff.pareto`, a room of their own below all three.
BELOW_THE_CHAIN = ("dptradeoff.release", "dptradeoff.stats")


def chain_imports_below(graph: dict[str, dict[str, int]]) -> list[str]:
    """'path:line' of every import of `dptradeoff.bo` from a package that sits below it."""
    return sorted(f"{MODULES[name].relative_to(REPO)}:{line}" for name in graph if MODULES.get(name)
                  and name.startswith(BELOW_THE_CHAIN)
                  for imported, line in graph[name].items() if imported == "dptradeoff.bo")


def test_a_chain_import_from_below_would_be_found():
    graph = _graph()
    graph["dptradeoff.stats.hypervolume"] = imports("dptradeoff.stats.hypervolume",
                                                    "from ..bo.gp import fit\n", is_package=False)
    assert chain_imports_below(graph) == ["src/dptradeoff/stats/hypervolume.py:1"]


def test_release_and_statistics_do_not_import_the_chain():
    back = chain_imports_below(_graph())
    assert not back, (f"these modules of release/ or stats/ import dptradeoff.bo, a layer above them: {', '.join(back)}; "
                      f"move what they need below (as dptradeoff.pareto)")
