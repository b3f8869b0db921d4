"""Every path under results/, figures/ and tables/ is written once, in src/dptradeoff/paths.py: the
Snakefile, the rule files, the scripts and the rest of the library build theirs from it."""
from __future__ import annotations

import io
import tokenize
from collections import Counter

from conftest import REPO
from dptradeoff import paths

PREFIXES = ("results/", "figures/", "tables/")
PATHS_MODULE = REPO / "src" / "dptradeoff" / "paths.py"
STRING_PREFIX_LETTERS = "rRbBuUfF"
FSTRING_START = getattr(tokenize, "FSTRING_START", None)   # Python 3.12 splits f-strings into tokens


def _workflow_and_library_files():
    return [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk")),
            *sorted((REPO / "workflow" / "scripts").glob("*.py")), *sorted((REPO / "src").rglob("*.py"))]


def path_literals(text: str):
    """(line, text) of every string literal in `text` (Python or Snakemake) that starts with a
    results/, figures/ or tables/ path."""
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING:
            body = token.string.lstrip(STRING_PREFIX_LETTERS).strip("\"'")
        elif FSTRING_START is not None and previous == FSTRING_START:
            body = token.string
        else:
            body = ""
        if body.startswith(PREFIXES):
            yield token.start[0], body
        previous = token.type


def test_the_scanner_finds_paths_in_rules_f_strings_and_docstrings_alike():
    text = 'rule r:\n    output:\n        "tables/t.csv",\n\n\ndef f(p):\n    return f"results/{p}/x.parquet"\n'
    assert [body for _, body in path_literals(text)] == ["tables/t.csv", "results/{p}/x.parquet"]


def test_every_results_figures_and_tables_path_is_written_once_in_paths_py():
    found = {path: list(path_literals(path.read_text(encoding="utf-8"))) for path in _workflow_and_library_files()}
    outside = [f"{path.relative_to(REPO)}:{line}: {body}" for path, literals in found.items() if path != PATHS_MODULE
               for line, body in literals]
    assert not outside, "build these paths with dptradeoff.paths instead:\n" + "\n".join(outside)
    twice = [body for body, count in Counter(body for _, body in found[PATHS_MODULE]).items() if count > 1]
    assert found[PATHS_MODULE] and not twice, twice


def test_a_pattern_filled_with_values_is_the_concrete_path():
    concrete = paths.RunFiles("svt", "dpareto", 0)
    values = {"problem": "svt", "chain": "dpareto", "method": "dpareto", "run": 0}
    assert paths.CHAIN_RUN.proposal("{round}").format(round=3, **values) == concrete.proposal(3)
    assert paths.METHOD_RUN.evals("{batch}").format(batch=2, **values) == concrete.evals(2)
    assert paths.CHAIN_RUN.evaluations.format(**values) == concrete.evaluations
    assert concrete.evaluations == "results/dpareto/svt/dpareto/0/evaluations.parquet"   # the layout the docs describe
    assert paths.batch_chain(4) == "dpareto-q4"                                          # DPareto's one name
    assert paths.tables("front-svt") == ["tables/front-svt.csv", "tables/front-svt.md"]
