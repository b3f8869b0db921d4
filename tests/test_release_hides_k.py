"""A release under `release.randomness: os` leaves no trace of its number of trials K (docs/release.md,
"What a release hides"). The rule's two scripts (workflow/scripts/release.py and release_report.py) run
here as Snakemake runs them, on a tiny pure-ε problem, twice: once with K = 1 and once with K = 6 slow
trials, the selection releasing the same trial both times. Every file they write (the record, the
model, the candidates, the table, the figure, both logs) is then byte for byte the same, and none holds
a date, a time, a duration, K or the non-private reference."""
from __future__ import annotations

import json
import logging
import re
import runpy
import sys
import time
import warnings
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from snakemake.iocontainers import Namedlist

from conftest import REPO
from dptradeoff import paths
from dptradeoff.io import matrix_table, write_frame, write_table
from dptradeoff.problems import definition
from dptradeoff.release import run
from dptradeoff.release.selection import Selected
from dptradeoff.release.settings import ReleaseSettings, derived_problem_entries

ENTRY = {"oracle": f"{REPO}/tests/user_problems/pure_epsilon.py:PureCentroid", "dataset": "adult",
         "domain": {"eps": {"low": 0.01, "high": 10.0, "log": True}, "clip": {"low": 0.05, "high": 5.0, "log": True}}}
RELEASE = {"problem": "mine", "tuning": {"split": 0.2}, "validation": 0.25, "epsilon": 4.0, "delta": 1e-5,
           "selection": {"method": "random-stopping", "eta": 1.0, "mean_trials": 4}, "score_noise": 0.05,
           "candidates": {"max": 4, "perturbations": 0, "scale": 0.2}}
SLOW_TRIALS_SECONDS = 2.1   # past a zip date's 2-second step and a PDF date's 1-second one
# What would date a run or count its trials: ISO and PDF dates, clock times, durations, K by name.
TRACES = re.compile(rb"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}:\d{2}|D:\d{8}|CreationDate|seconds|trials_run|trials run|"
                    rb"K = \d|reference_without")


def _config(randomness: str) -> dict:
    config = {"seed": 3, "problems": {"mine": ENTRY}, "release": {**RELEASE, "randomness": randomness}}
    config["problems"].update(derived_problem_entries(config))
    return config


def _workdir(work: Path) -> None:
    """Adult-shaped data (two separable classes) and a tuning front of four points, under `work`."""
    rng = np.random.default_rng(0)
    for part, n in (("train", 2000), ("test", 200)):
        y = np.arange(n) % 2
        x = rng.normal(size=(n, 4)) + 1.5 * y[:, None]
        write_table(matrix_table(x, y), work / paths.data("adult", part), {"source": "test", "source_label": "test rows"})
    eps = np.array([0.1, 0.3, 1.0, 3.0])
    write_frame(pd.DataFrame({"eps": eps, "clip": 1.0, "epsilon": eps, "utility": [0.6, 0.7, 0.8, 0.85],
                              "error": [0.4, 0.3, 0.2, 0.15], "failure": None}),
                work / paths.RunFiles("mine-tuning", paths.DPARETO, 0).evaluations, {})


def _selection(trials: int, slow: float):
    """Random stopping with K = `trials` whose released trial is the same whatever K: the first, drawn
    from a fixed generator; the other K - 1 train too, from the OS-seeded one, each with a warning,
    and take `slow` s."""
    def select(trial, eta, mean, rng):
        score, output = trial(np.random.default_rng(7))
        for _ in range(trials - 1):
            trial(rng)
            warnings.warn("a later trial's warning")
        time.sleep(slow)
        return Selected(0, float(score), output, trials)
    return select


def _run_rule_scripts(work: Path, config: dict, monkeypatch) -> dict[str, bytes]:
    """The release and release_report scripts as their rules run them, in `work`; every file they wrote."""
    monkeypatch.chdir(work)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")   # what the script's limit_threads sets, undone after the test
    settings = ReleaseSettings.from_config(config)
    files = paths.ReleaseFiles("mine")
    release_job = dict(
        threads=1, log=Namedlist(["logs/release/mine.log"]), wildcards=Namedlist(fromdict={"problem": "mine"}),
        input=Namedlist(fromdict={"tuning": paths.RunFiles("mine-tuning", paths.DPARETO, 0).evaluations}),
        output=Namedlist(fromdict=files.files(diagnostics=settings.keeps_diagnostics)),
        params=Namedlist(fromdict={"settings": settings, "problem": definition(config, "mine"),
                                   "tuning": definition(config, "mine-tuning"), "utility_floor": None,
                                   "conversion": "dp_accounting", "config_label": "test config"}))
    report_job = dict(
        threads=1, log=Namedlist(["logs/figures/release-mine.log"]), input=Namedlist([files.record]),
        output=Namedlist(fromdict={"figure": paths.figure("release-mine"), "csv": paths.table("release-mine", "csv"),
                                   "md": paths.table("release-mine", "md")}),
        params=Namedlist(fromdict={"config_label": "test config"}))
    for script, job in (("release.py", release_job), ("release_report.py", report_job)):
        for log in job["log"]:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
        runpy.run_path(str(REPO / "workflow/scripts" / script), init_globals={"snakemake": SimpleNamespace(**job)})
    inputs = {paths.data("adult", "train"), paths.data("adult", "test"),
              paths.RunFiles("mine-tuning", paths.DPARETO, 0).evaluations}
    return {str(p.relative_to(work)): p.read_bytes() for p in sorted(work.rglob("*"))
            if p.is_file() and str(p.relative_to(work)) not in inputs}


def _print_warning(message, category, filename, lineno, file=None, line=None):
    print(f"{category.__name__}: {message}", file=sys.stderr)


@pytest.fixture
def restored_logging():
    """The scripts' rule_context replaces the root logger's handlers: give pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:], root.level = handlers, level


def test_a_release_under_os_randomness_writes_the_same_bytes_whatever_its_number_of_trials(
        tmp_path, monkeypatch, restored_logging, capsys):
    config = _config("os")
    written, printed = {}, {}
    monkeypatch.setattr(warnings, "showwarning", _print_warning)   # as a script shows them, not pytest's record
    for trials, slow in ((1, 0.0), (6, SLOW_TRIALS_SECONDS)):
        work = tmp_path / f"k{trials}"
        _workdir(work)
        (work / paths.ReleaseFiles("mine").diagnostics).parent.mkdir(parents=True)
        (work / paths.ReleaseFiles("mine").diagnostics).write_text('{"trials_run": 3}\n')   # an earlier experiment's
        monkeypatch.setattr(run, "random_stopping", _selection(trials, slow))
        written[trials] = _run_rule_scripts(work, config, monkeypatch)
        printed[trials] = capsys.readouterr()

    one, six = written[1], written[6]
    assert set(one) == set(six) == {paths.ReleaseFiles("mine").record, paths.ReleaseFiles("mine").model,
                                    paths.ReleaseFiles("mine").candidates, paths.figure("release-mine"),
                                    *paths.tables("release-mine"), "logs/release/mine.log",
                                    "logs/figures/release-mine.log"}   # no diagnostics.json: the stale one removed
    for name in one:
        assert one[name] == six[name], f"{name} differs between K = 1 and K = 6"
        assert not TRACES.search(one[name]), f"{name} holds {TRACES.search(one[name]).group().decode()!r}"
    with zipfile.ZipFile(tmp_path / "k6" / paths.ReleaseFiles("mine").model) as model:
        assert {member.date_time for member in model.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert b"mine: released" in one["logs/release/mine.log"]   # the log was written, without times
    assert printed[1] == printed[6] and "mine: released" in printed[1].err   # what the job prints: no warning either


@pytest.mark.filterwarnings("ignore:a later trial's warning")
def test_a_seeded_release_keeps_k_and_its_run_time_in_a_labelled_private_diagnostics_file(
        tmp_path, monkeypatch, restored_logging):
    _workdir(tmp_path)
    monkeypatch.setattr(run, "random_stopping", _selection(2, 0.0))
    written = _run_rule_scripts(tmp_path, _config("config-seed"), monkeypatch)
    diagnostics = json.loads(written[paths.ReleaseFiles("mine").diagnostics])
    assert diagnostics["trials_run"] == 2 and diagnostics["seconds"] > 0
    assert diagnostics["keep_private"].startswith("NOT covered")
    assert 0 <= diagnostics["reference_without_private_tuning"]["test_utility"] <= 1
    record = written[paths.ReleaseFiles("mine").record]
    assert b"trials_run" not in record and b"diagnostics.json: keep that file private" in record
