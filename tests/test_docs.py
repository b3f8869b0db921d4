"""The documentation says only true things about the tree: README.md, every docs/*.md page and
config/README.md.

- Every relative link and image (`[..](path)`, `![..](path)`; http(s) and mailto links ignored)
  resolves to an existing file or folder, and a `#anchor` into a Markdown page names one of its
  headings.
- README.md stays a front door: at most 250 lines, linking every page under docs/, and it keeps
  the test command `.ci/run` runs.
- No page and no report caption (workflow/report/*.rst) states a release's number of trials K
  ("made one trial", "K = 3") or the numbers of its non-private reference: the guarantee assumes K
  stays hidden, and the reference is not private (docs/release.md, "What a release hides").
- Every command in a fenced shell block names something real:
  - `snakemake` (also `./in-env snakemake`, `./in-env python -m snakemake`): every option is one of
    `snakemake --help`; every `--configfile` file and `--profile` folder exists; a target without
    a slash is a rule of the workflow (`^rule NAME:` in Snakefile and workflow/rules/*.smk); a
    target with one starts with results/, figures/ or tables/ and the workflow can make it on the
    default config (one dry run, `snakemake -n`, for all targets together);
  - `dptradeoff SUB` (also `python -m dptradeoff SUB`): SUB is a subcommand and every option is
    in `dptradeoff SUB --help`;
  - `python benchmarks/X.py`: the script exists and every option appears in its source;
  - `pytest tests/X`: the path exists;
  - any other command given as a path (`profiles/slurm/local-slurm`): the file exists.

Every failure names the file, the line and the bad link or command.
"""
from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, snakemake

# one xdist worker: its module fixtures read snakemake --help and dry-run every documented target once
pytestmark = pytest.mark.xdist_group("docs")

README = REPO / "README.md"
DOC_FILES = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "config" / "README.md"]
README_MAX_LINES = 250

# Config files the reader writes before running the command that names them (README and
# docs/your-algorithm.md, "Characterise your own algorithm", step 2): not in the tree by design.
READER_WRITTEN = {"my.yaml"}

SHELL_FENCES = {"", "bash", "sh", "shell", "console"}
TARGET_PREFIXES = ("results/", "figures/", "tables/")
PLACEHOLDER = "..."

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s<>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def _prose(path: Path) -> str:
    """The text outside fenced blocks, with fences and inline code blanked (line numbers kept)."""
    out, fence = [], None
    for line in _lines(path):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence[0] * 3) and line.strip().strip(fence[0]) == "":
                fence = None
            out.append("")
        else:
            out.append(INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line))
    return "\n".join(out)


def _fenced_commands(path: Path) -> list[tuple[int, str]]:
    """(line number, logical line) of every line in a shell-fenced block; `\\` continuations joined."""
    out, fence, pending, start = [], None, "", 0
    for number, line in enumerate(_lines(path), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = (m.group(1), m.group(2).lower())
            continue
        if line.strip().startswith(fence[0][0] * 3) and line.strip().strip(fence[0][0]) == "":
            fence = None
            continue
        if fence[1] not in SHELL_FENCES:
            continue
        text = line.strip()
        if text.startswith("$ "):
            text = text[2:]
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        out.append((start, pending + text))
        pending = ""
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@functools.cache
def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    fenced = False
    for line in path.read_text().split("\n"):   # headings as written (inline code kept), fences skipped
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = _slug(m.group(1))
            n = seen.get(base, 0)
            anchors.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return anchors


def _ids(paths):
    return [_rel(p) for p in paths]


# ---------------------------------------------------------------------------------------------
# links and README shape


@pytest.mark.parametrize("doc", DOC_FILES, ids=_ids(DOC_FILES))
def test_relative_links_resolve(doc):
    text = _prose(doc)
    bad = []
    for m in LINK.finditer(text):
        target = m.group(1)
        line = text.count("\n", 0, m.start(1)) + 1
        if not target or re.match(r"^(https?|mailto):", target, re.I):
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (doc.parent / path_part).resolve() if path_part else doc
        if not resolved.exists():
            bad.append(f"{_rel(doc)}:{line}: link target {target!r} does not exist (resolved to {resolved})")
        elif anchor and resolved.suffix == ".md" and resolved.is_file() and anchor not in _anchors(resolved):
            bad.append(f"{_rel(doc)}:{line}: link {target!r}: no heading with anchor #{anchor} in "
                       f"{resolved.name} (anchors: {sorted(_anchors(resolved))})")
    assert not bad, "\n".join(bad)


def test_readme_is_at_most_250_lines():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md: {n} lines, more than {README_MAX_LINES}; move detail to docs/"


def test_readme_links_every_docs_page():
    linked = {(README.parent / m.group(1).partition("#")[0]).resolve()
              for m in LINK.finditer(_prose(README)) if m.group(1)}
    missing = [_rel(p) for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not missing, f"README.md: no link to {', '.join(missing)}"


NUMBER = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+)"
STATES_K = (re.compile(r"\bK\s*(?:=|was|is)\s*\d"), re.compile(r"\btrials_run\b"),
            re.compile(rf"\b(?:made|makes|ran|runs|took|takes|drew|draws|with)\b.{{0,40}}?\b{NUMBER}\s+trials?\b(?!')", re.I))
NON_PRIVATE_REFERENCE = re.compile(r"\breference\b", re.I), re.compile(r"non-private|not private|ignores the tuning|"
                                                                      r"without counting", re.I)
REPORT_CAPTIONS = sorted((REPO / "workflow" / "report").glob("*.rst"))


@pytest.mark.parametrize("doc", DOC_FILES + REPORT_CAPTIONS, ids=_ids(DOC_FILES + REPORT_CAPTIONS))
def test_no_page_states_a_releases_number_of_trials_or_its_non_private_reference(doc):
    text = _prose(doc) if doc.suffix == ".md" else doc.read_text(encoding="utf-8")
    bad = []
    for sentence in re.split(r"(?<=[.!?])\s+|\|", " ".join(text.split())):   # sentences and table cells
        if any(pattern.search(sentence) for pattern in STATES_K):
            bad.append(f"states a number of trials: {sentence!r}")
        if all(pattern.search(sentence) for pattern in NON_PRIVATE_REFERENCE) and re.search(r"\d\.\d", sentence):
            bad.append(f"states the non-private reference's numbers: {sentence!r}")
    assert not bad, f"{_rel(doc)}: " + "; ".join(bad) + " (docs/release.md, \"What a release hides\")"


def test_readme_keeps_the_ci_test_command():
    ci = [shlex.join(shlex.split(line, comments=True)) for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip().startswith("./in-env")]
    assert ci, ".ci/run: no ./in-env command found"
    commands = {shlex.join(shlex.split(c, comments=True)) for _, c in _fenced_commands(README)}
    for command in ci:
        assert command in commands, f"README.md: the test command of .ci/run, {command!r}, is not in a fenced block"


# ---------------------------------------------------------------------------------------------
# commands


def _commands() -> list[tuple[Path, int, str, list[str]]]:
    """(doc, line, text, tokens after ./in-env and wrappers) of every fenced shell command."""
    out = []
    for doc in DOC_FILES:
        for line, text in _fenced_commands(doc):
            try:
                tokens = shlex.split(text, comments=True)
            except ValueError as exc:
                out.append((doc, line, text, ["<unparsable>", str(exc)]))
                continue
            while tokens and (tokens[0] in ("sudo", "nice", "time", "env")
                              or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", tokens[0])):
                tokens = tokens[1:]
            if tokens and tokens[0] == "./in-env":
                tokens = tokens[1:]
            if tokens:
                out.append((doc, line, text, tokens))
    return out


def _kind(tokens: list[str]) -> tuple[str, list[str]]:
    """What a command is, and its arguments."""
    if tokens[0] == "snakemake":
        return "snakemake", tokens[1:]
    if tokens[0] == "dptradeoff":
        return "dptradeoff", tokens[1:]
    if tokens[0] == "pytest":
        return "pytest", tokens[1:]
    if tokens[0] in ("python", "python3") and len(tokens) > 1:
        if tokens[1] == "-m" and len(tokens) > 2 and tokens[2] in ("snakemake", "dptradeoff", "pytest"):
            return tokens[2], tokens[3:]
        if tokens[1].startswith("benchmarks/"):
            return "benchmark", tokens[1:]
    if "/" in tokens[0] and not tokens[0].endswith("/") and re.fullmatch(r"[\w./-]+", tokens[0]):
        return "path", tokens
    return "other", tokens


COMMANDS = _commands()


def _where(doc, line, text) -> str:
    return f"{_rel(doc)}:{line}: `{text}`"


@functools.cache
def _rules() -> frozenset[str]:
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    return frozenset(name for f in files for name in re.findall(r"^rule (\w+):", f.read_text(), re.M))


@pytest.fixture(scope="module")
def snakemake_options() -> dict[str, object]:
    """Every option of `snakemake --help` with its arity: 0, 1, '?', '+' or '*'."""
    done = subprocess.run([sys.executable, "-m", "snakemake", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    options: dict[str, object] = {}
    for line in done.stdout.splitlines():
        m = re.match(r"^ {2,4}(-\S.*?)(?: {2,}|$)", line)
        if not m:
            continue
        for alias in m.group(1).split(", "):
            name, _, rest = alias.partition(" ")
            if not re.fullmatch(r"--?[\w-]+", name):
                continue
            rest = rest.strip()
            if not rest:
                arity = 0
            elif rest.endswith("...]"):
                arity = "*" if rest.startswith("[") else "+"
            elif rest.startswith("["):
                arity = "?"
            else:
                arity = 1
            options[name] = arity
    assert "--cores" in options and "--configfile" in options, "snakemake --help: options not recognised"
    return options


def _parse_snakemake(args, options):
    """(targets, [(option, values)], [problems]) as Snakemake's argument parser would read `args`."""
    targets, given, problems = [], [], []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == PLACEHOLDER:
            continue
        if token.startswith("-") and token != "-":
            name, eq, value = token.partition("=")
            if name not in options:
                problems.append(f"{name} is not an option of snakemake (snakemake --help)")
                continue
            arity = options[name]
            values = [value] if eq else []
            if not eq and arity == 1 and i < len(args):
                values, i = [args[i]], i + 1
            elif not eq and arity == "?" and i < len(args) and not args[i].startswith("-"):
                values, i = [args[i]], i + 1
            elif not eq and arity in ("+", "*"):
                while i < len(args) and not args[i].startswith("-"):
                    values.append(args[i])
                    i += 1
            given.append((name, values))
        else:
            targets.append(token)
    return targets, given, problems


@pytest.fixture(scope="module")
def snakemake_targets(snakemake_options):
    """Every path target of every snakemake command, and the dry run's verdict on them together."""
    paths = []
    for _, args in _commands_of("snakemake"):
        targets, _, _ = _parse_snakemake(args, snakemake_options)
        paths += [t for t in targets if "/" in t and t.startswith(TARGET_PREFIXES) and not re.search(r"[<>{}*]", t)]
    return sorted(set(paths))


def _commands_of(kind: str):
    """(where, arguments) of every documented command of this kind."""
    for doc, line, text, tokens in COMMANDS:
        found, args = _kind(tokens)
        if found == kind:
            yield _where(doc, line, text), args


@pytest.fixture(scope="module")
def dry_run(snakemake_targets, tmp_path_factory):
    """One `snakemake -n` of every path target on the default config, in a scratch directory."""
    if not snakemake_targets:
        return None
    return snakemake(tmp_path_factory.mktemp("docs-dry-run"), "-n", *snakemake_targets, timeout=300)


def test_docs_have_commands_to_check():
    kinds = {_kind(tokens)[0] for _, _, _, tokens in COMMANDS}
    assert {"snakemake", "dptradeoff", "pytest", "benchmark"} <= kinds, f"commands found: {sorted(kinds)}"


def test_snakemake_commands_name_real_rules_files_and_options(snakemake_options, dry_run):
    bad = []
    for where, args in _commands_of("snakemake"):
        targets, given, problems = _parse_snakemake(args, snakemake_options)
        bad += [f"{where}: {p}" for p in problems]
        for name, values in given:
            if name in ("--configfile", "--configfiles"):
                if not values:
                    bad.append(f"{where}: {name} without a file")
                for value in values:
                    if not (REPO / value).is_file() and value not in READER_WRITTEN:
                        bad.append(f"{where}: {name} {value}: no such file (Snakemake's {name} takes every "
                                   "following word: put it after the targets or write it with '=')")
            elif name == "--profile":
                for value in values:
                    if not (REPO / value).exists():
                        bad.append(f"{where}: --profile {value}: no such folder")
        for target in targets:
            if "/" in target:
                if not target.startswith(TARGET_PREFIXES):
                    bad.append(f"{where}: target {target!r} is not under {', '.join(TARGET_PREFIXES)}")
            elif target not in _rules():
                bad.append(f"{where}: target {target!r} is not a rule of the workflow")
    if dry_run is not None and dry_run.returncode != 0:
        missing = re.findall(r"No rule to produce (\S+)", dry_run.stdout + dry_run.stderr)
        if missing:
            for target in missing:
                where = [_where(d, ln, t) for d, ln, t, tok in COMMANDS if target in tok]
                bad.append(f"{'; '.join(where) or target}: the workflow has no rule to produce {target}")
        else:
            bad.append("snakemake -n of the documented targets failed:\n" + (dry_run.stdout + dry_run.stderr)[-3000:])
    assert not bad, "\n".join(bad)


@functools.cache
def _help(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "dptradeoff", *args, "--help"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, f"dptradeoff {' '.join(args)} --help failed:\n{done.stderr[-2000:]}"
    return done.stdout


def test_dptradeoff_commands_name_real_subcommands_and_options():
    m = re.search(r"\{([\w,-]+)\}", _help())
    assert m, "dptradeoff --help: no subcommand list"
    subcommands = set(m.group(1).split(","))
    bad = []
    for where, args in _commands_of("dptradeoff"):
        if not args or args[0] not in subcommands:
            bad.append(f"{where}: {args[0] if args else '(none)'!r} is not a dptradeoff subcommand "
                       f"({', '.join(sorted(subcommands))})")
            continue
        known = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", _help(args[0])))
        rest = args[1:]
        for i, token in enumerate(rest):
            if token.startswith("-") and token != PLACEHOLDER:
                name, eq, value = token.partition("=")
                if name not in known:
                    bad.append(f"{where}: {name} is not an option of `dptradeoff {args[0]}` (see its --help)")
                if name == "--configfile":
                    value = value if eq else (rest[i + 1] if i + 1 < len(rest) else "")
                    if not (REPO / value).is_file() and value not in READER_WRITTEN:
                        bad.append(f"{where}: --configfile {value}: no such file")
    assert not bad, "\n".join(bad)


def test_benchmark_test_and_script_commands_name_real_files_and_options():
    bad = []
    for doc, line, text, tokens in COMMANDS:
        kind, args = _kind(tokens)
        where = _where(doc, line, text)
        if kind == "benchmark":
            script = REPO / args[0]
            if not script.is_file():
                bad.append(f"{where}: {args[0]}: no such benchmark script")
                continue
            source = script.read_text()
            for token in args[1:]:
                if token.startswith("--"):
                    name = token.partition("=")[0]
                    if name not in source:
                        bad.append(f"{where}: {name} does not appear in {args[0]}")
        elif kind == "pytest":
            for token in args:
                if not token.startswith("-") and ("/" in token or token.endswith(".py")):
                    path = token.split("::")[0]
                    if not (REPO / path).exists():
                        bad.append(f"{where}: {path}: no such test file or folder")
        elif kind == "path":
            if not (REPO / args[0]).is_file():
                bad.append(f"{where}: {args[0]}: no such file")
    assert not bad, "\n".join(bad)
