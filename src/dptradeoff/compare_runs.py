"""Two runs of the pipeline compared on their data (`dptradeoff compare-runs BEFORE AFTER`): every
file under results/, tables/ and figures/ of one run must exist in the other with the same content,
timing aside.

- Parquet: the same columns and values, and the same provenance metadata.
- CSV: the same frame.
- Markdown: the same text, table cells under a timing header blanked.
- PDF: the same bytes apart from the creation and modification dates.
- Anything else: the same bytes.

Timing is any column, metadata key or table header naming seconds, wall time, elapsed time or a
duration (`TIMING`): it measures the machine, not the result.

A problem whose oracle is not seedable (`seedable = False`: its noise comes from a generator of its own)
replays in distribution, not bit for bit: its evaluation files say so in their provenance (`seedable`).
A difference in a file of such a problem (its name in the file's path) or in one built from its rows
(the replay note, `problems.evaluate.NOT_SEEDABLE`, in its text or PDF metadata) is listed apart, as
expected, and is no failure.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from .problems.evaluate import NOT_SEEDABLE

FOLDERS = ("results", "tables", "figures")
TIMING = re.compile(r"seconds|wall|elapsed|duration|\bs per\b|\btime\b", re.IGNORECASE)
PDF_DATES = re.compile(rb"/(CreationDate|ModDate) \(D:[^)]*\)")


def _files(root: Path) -> set[Path]:
    return {p.relative_to(root) for folder in FOLDERS if (root / folder).is_dir()
            for p in (root / folder).rglob("*") if p.is_file() and ".snakemake" not in p.parts}


def _untimed_metadata(table) -> dict:
    raw = (table.schema.metadata or {}).get(b"dptradeoff", b"{}")
    return {k: v for k, v in json.loads(raw).items() if not TIMING.search(k)}


def _same_parquet(a: Path, b: Path) -> bool:
    ta, tb = pq.read_table(a), pq.read_table(b)
    keep = lambda t: t.select([c for c in t.column_names if not TIMING.search(c)])  # noqa: E731
    return keep(ta).equals(keep(tb)) and _untimed_metadata(ta) == _untimed_metadata(tb)


def _csv(path: Path) -> tuple[str, pd.DataFrame]:
    """A table's provenance line (its first line when it starts with '#') and its frame."""
    with open(path) as f:
        first = f.readline()
    provenance = first if first.startswith("#") else ""
    return provenance, pd.read_csv(path, skiprows=1 if provenance else 0)


def _same_csv(a: Path, b: Path) -> bool:
    (pa, fa), (pb, fb) = _csv(a), _csv(b)
    keep = lambda f: f[[c for c in f.columns if not TIMING.search(str(c))]]  # noqa: E731
    return pa == pb and keep(fa).equals(keep(fb))


def _untimed_markdown(text: str) -> list[str]:
    """The lines of a Markdown text with every table cell under a timing header blanked."""
    out, timed = [], set()
    for line in text.splitlines():
        if not line.startswith("|"):
            out.append(line)
            timed = set()
            continue
        cells = line.strip().strip("|").split("|")
        if not timed and not set(line) <= set("|-: "):
            timed = {i for i, cell in enumerate(cells) if TIMING.search(cell)} or {-1}
        out.append("|".join("" if i in timed else c for i, c in enumerate(cells)))
    return out


def _same(a: Path, b: Path) -> bool:
    if a.suffix == ".parquet":
        return _same_parquet(a, b)
    if a.suffix == ".csv":
        return _same_csv(a, b)
    if a.suffix == ".md":
        return _untimed_markdown(a.read_text()) == _untimed_markdown(b.read_text())
    if a.suffix == ".pdf":
        return PDF_DATES.sub(b"", a.read_bytes()) == PDF_DATES.sub(b"", b.read_bytes())
    return a.read_bytes() == b.read_bytes()


def not_seedable(root: Path) -> set[str]:
    """The problems whose evaluation files under `root`/results record an oracle that is not seedable."""
    problems = set()
    for path in (root / "results").rglob("*.parquet") if (root / "results").is_dir() else []:
        try:
            meta = json.loads((pq.read_schema(path).metadata or {}).get(b"dptradeoff", b"{}"))
        except Exception:   # an unreadable file is compared (and reported) as it is
            continue
        if meta.get("seedable") is False and meta.get("problem"):
            problems.add(str(meta["problem"]))
    return problems


def _names_problem(path: Path, problems: set[str]) -> str | None:
    """The problem of `problems` that `path` (relative to a run) belongs to: a folder of that name, or a file
    named <problem> or ...-<problem> (figures/front-<problem>.pdf, tables/audit-<problem>.csv)."""
    for problem in problems:
        if problem in path.parts[:-1] or path.stem == problem or path.stem.endswith(f"-{problem}"):
            return problem
    return None


def _says_not_seedable(path: Path) -> bool:
    """Whether a file built from a non-seedable oracle's rows says so (the replay note, as text or in a
    PDF's UTF-16 metadata)."""
    data = path.read_bytes()
    return NOT_SEEDABLE.encode() in data or NOT_SEEDABLE.encode("utf-16-be") in data


def compare(before: Path, after: Path) -> tuple[int, list[str], list[str]]:
    """(files compared, one line per difference, one line per difference of a problem whose oracle is not
    seedable: expected, since its rows replay in distribution, not bit for bit)."""
    files_before, files_after = _files(before), _files(after)
    differences = [f"only in {before}: {p}" for p in sorted(files_before - files_after)]
    differences += [f"only in {after}: {p}" for p in sorted(files_after - files_before)]
    common = sorted(files_before & files_after)
    problems = not_seedable(before) | not_seedable(after)
    in_distribution = []
    for p in common:
        if _same(before / p, after / p):
            continue
        problem = _names_problem(p, problems)
        if problem is not None or _says_not_seedable(before / p) or _says_not_seedable(after / p):
            owner = f"{problem}'s oracle is" if problem else "built from rows of an oracle"
            in_distribution.append(f"differs, as expected: {p} ({owner} not seedable: {NOT_SEEDABLE})")
        else:
            differences.append(f"differs: {p}")
    return len(common), differences, in_distribution
