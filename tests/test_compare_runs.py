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
