"""Papers 003 and 002 through Snakemake on tiny settings (the session's tiny `all`): figures, tables and their provenance, and
a config error that names its key before anything runs."""
from __future__ import annotations

import copy

import pytest
import yaml

from dptradeoff.io import read_provenance
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import read
from tiny import TINY

pytestmark = pytest.mark.slow

TARGETS = ["figures/proposetest_fig1.pdf", "figures/proposetest_fig2.pdf", "tables/proposetest_adult.csv",
           "figures/taylor_fig1.pdf", "tables/taylor_table1.csv", "figures/taylor_fig2.pdf"]


@pytest.mark.xdist_group("tiny")
def test_proposetest_and_taylor_outputs(tiny_all):
    """Read from the session's tiny `all` (conftest's `tiny_all`), whose proposetest and taylor sections
    are TINY's."""
    work, done = tiny_all
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    for target in TARGETS:
        assert (work / target).exists(), target
    paths = read_frame(str(work / "results/proposetest/paths.parquet"))
    assert paths["seed"].nunique() == 20 and (paths.groupby("seed")["iteration"].min() == 0).all()
    adult = read(str(work / "tables/proposetest_adult.csv")).iloc[0]
    assert 0.5 <= adult["test_accuracy"] <= 1 and adult["iterations"] <= adult["worst_case_iterations"]
    assert adult["delta_total"] == pytest.approx(1.1e-5) and "embedded" in adult["source"]
    # the released table holds only what the DP total covers; the training's epsilon is the one at the noise used
    assert not {"selected_validation_utility", "best_validation_utility"} & set(adult.index)
    assert adult["epsilon_train"] <= adult["epsilon_train_target"]
    assert adult["epsilon_total"] == pytest.approx(adult["epsilon_train"] + adult["epsilon_tuning"], rel=1e-5)   # CSV keeps 6 digits
    diagnostics = work / "tables/nonprivate/proposetest_adult_diagnostics.csv"
    assert "NOT COVERED BY ANY DP GUARANTEE" in diagnostics.read_text().splitlines()[0]
    assert 0 <= read(str(diagnostics))["best_validation_utility"].iloc[0] <= 1
    table = read(str(work / "tables/taylor_table1.csv"))
    assert len(table) == 12 and {"error_0.10", "error_0.30", "paper_0.10", "guarantee", "loss_at_theta_0"} <= set(table.columns)
    assert (table["n"] <= 500).all() and (table[["error_0.10", "error_0.30"]] >= 0).all().all()
    # every row says how it was trained and what covers it: only the default reading (exact, dp noise) is eps-DP
    by_reading = table.groupby("reading").first()
    assert tuple(by_reading.loc["default", ["solver", "noise"]]) == ("exact", "dp")
    assert tuple(by_reading.loc["paper", ["solver", "noise"]]) == ("sgd", "as_published")
    assert table.loc[table["reading"] == "default", "guarantee"].str.startswith("eps-DP").all()
    assert table.loc[table["reading"] == "paper", "guarantee"].str.startswith("not eps-DP").all()
    assert "not eps-DP" in (work / "tables/taylor_table1.md").read_text()
    for reading in ("default", "paper"):
        run = work / f"results/taylor/{reading}/adult/logistic/n500-r2.parquet"
        meta = read_provenance(run)
        assert meta["n"] == 500 and meta["reading"] == reading and read_frame(str(run))["repeat"].nunique() == 2
        assert meta["guarantee"] == table.loc[table["reading"] == reading, "guarantee"].iloc[0]
    for name in ("proposetest_fig1", "taylor_fig1", "taylor_fig2"):
        assert b"seed" in (work / f"figures/{name}.pdf").read_bytes()


@pytest.mark.parametrize("key, value", [("fig1_measuring", [0.2]), ("fig2", {**TINY["taylor"]["fig2"], "reading": "nope"})])
def test_taylor_config_errors_are_refused_before_anything_runs(run_snakemake, tmp_path, key, value):
    """Runs Snakemake itself: a config error must stop Snakemake before anything runs."""
    bad = copy.deepcopy(TINY["taylor"])
    bad[key] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"taylor": bad}))
    work = tmp_path / "work"
    done = run_snakemake(work, "figures/taylor_fig1.pdf", "--cores", "1", f"--configfile={path}")
    assert done.returncode != 0 and f"taylor.{key}" in done.stderr
    assert not (work / "results").exists()
