"""`dptradeoff compare-runs`: two runs equal on their data, timing aside, and any other change found."""
from __future__ import annotations

import shutil

import pandas as pd
import pytest

from dptradeoff.__main__ import main
from dptradeoff.problems.tables import write_frame

MD = "| method | region | s per proposal |\n|---|---|---|\n| dpareto | 0.2471 | {t} |\n\nNote: {note}\n"
PDF = b"%PDF-1.4\n/CreationDate (D:{date})\n/Title (fig)\n"


def _run(root, seconds, value=0.25, note="one seed", date="20261126"):
    (root / "tables").mkdir(parents=True)
    (root / "figures").mkdir()
    (root / "results" / "x").mkdir(parents=True)
    frame = pd.DataFrame({"epsilon": [0.5, 1.0], "error": [value, 0.2], "wall_seconds": [seconds, 2 * seconds]})
    write_frame(frame, str(root / "results" / "x" / "evaluations.parquet"), {"seed": 1, "seconds": seconds})
    with open(root / "tables" / "t.csv", "w") as f:
        f.write("# data: embedded adult; config: config/config.yaml\n")
        frame.rename(columns={"wall_seconds": "seconds_per_proposal"}).to_csv(f, index=False)
    (root / "tables" / "t.md").write_text(MD.format(t=seconds, note=note))
    (root / "figures" / "f.pdf").write_bytes(PDF.replace(b"{date}", date.encode()))


def test_runs_differing_only_in_timing_are_identical(tmp_path, capsys):
    _run(tmp_path / "a", 1.5)
    _run(tmp_path / "b", 7.25, date="20270101")
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "compared 4 files: identical" in capsys.readouterr().out


def test_a_changed_value_note_or_missing_file_is_reported(tmp_path, capsys):
    _run(tmp_path / "a", 1.5)
    for name, change in {"value": {"value": 0.26}, "note": {"note": "two seeds"}}.items():
        _run(tmp_path / name, 1.5, **change)
        with pytest.raises(SystemExit, match="1"):
            main(["compare-runs", str(tmp_path / "a"), str(tmp_path / name)])
        out = capsys.readouterr().out
        assert ("differs: results/x/evaluations.parquet" in out) == (name == "value")
        assert ("differs: tables/t.md" in out) == (name == "note")
    shutil.copytree(tmp_path / "a", tmp_path / "c")
    (tmp_path / "c" / "figures" / "f.pdf").unlink()
    with pytest.raises(SystemExit, match="1"):
        main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "c")])
    assert "only in" in capsys.readouterr().out


def _secure_run(root, problem, utility: float, seedable: bool):
    """A run's evaluation file as the pipeline writes it (`replay_provenance` in its provenance), its front
    figure and a table built from its rows (the rows' source label in its provenance line)."""
    from types import SimpleNamespace

    from dptradeoff.problems.evaluate import REPLAY_NOTE, replay_provenance

    oracle = SimpleNamespace(seedable=seedable)
    folder = root / "results" / "dpareto" / problem / "random" / "0"
    folder.mkdir(parents=True)
    frame = pd.DataFrame({"epsilon": [0.5], "utility": [utility], "seedable": [seedable]})
    write_frame(frame, str(folder / "evaluations.parquet"),
                {"problem": problem, **replay_provenance(SimpleNamespace(oracle=oracle))})
    (root / "figures").mkdir(exist_ok=True)
    (root / "figures" / f"front-{problem}.pdf").write_bytes(PDF.replace(b"(fig)", f"(front {utility})".encode()))
    (root / "tables").mkdir(exist_ok=True)
    label = f"data: {problem}'s own" + ("" if seedable else f"; {REPLAY_NOTE}")
    (root / "tables" / "pooled.csv").write_text(f"# {label}\nutility\n{utility}\n")


@pytest.mark.parametrize("seedable", [False, True])
def test_differences_of_an_oracle_that_is_not_seedable_are_labelled_not_failed(tmp_path, capsys, seedable):
    """Two runs of a problem whose oracle draws its own noise differ in every file built from its rows: listed as
    expected (its rows replay in distribution, not bit for bit), exit 0. The same differences of a seedable
    oracle's problem fail the comparison."""
    _secure_run(tmp_path / "a", "laplace-mean", 0.9981, seedable)
    _secure_run(tmp_path / "b", "laplace-mean", 0.9975, seedable)
    if seedable:
        with pytest.raises(SystemExit, match="1"):
            main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "b")])
        assert "differs: tables/pooled.csv" in capsys.readouterr().out
        return
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    for path in ("results/dpareto/laplace-mean/random/0/evaluations.parquet", "figures/front-laplace-mean.pdf",
                 "tables/pooled.csv"):
        assert f"differs, as expected: {path} (" in out
    assert "in distribution, not bit for bit" in out and "compared 3 files: no other differences, timing aside; 3 differ as they may" in out
