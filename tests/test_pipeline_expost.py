"""Paper 004 through Snakemake: Table 1 and Fig. 1 of the tiny `all`, and a config error that
names its key before anything runs. (Tables 2-3 run in the tiny `all`.)"""
from __future__ import annotations

import copy

import pytest
import yaml

from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import read
from tiny import TINY

pytestmark = pytest.mark.slow


@pytest.mark.xdist_group("tiny")
def test_table1_and_fig1(tiny_all):
    """Read from the session's tiny `all` (conftest's `tiny_all`), whose expost section is TINY's."""
    work, done = tiny_all
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    table = read(str(work / "tables/expost_table1.csv"))
    assert list(dict.fromkeys(table["dataset"])) == ["S8000", "Reddit"] and (table["trials"] == 2).all()
    assert table["guarantee"].notna().all()
    trials = read_frame(str(work / "results/expost/table1/S8000.parquet"))
    assert set(trials["method"]) == {"doubling", "noise_reduction", "alg3", "alg3_as_published"}
    assert (trials["spent"] <= 10 * (1 + 1e-12)).all()          # no run overspends its budget
    assert (trials["correct"] <= trials["answers"]).all()
    pdf = (work / "figures/expost_fig1.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"Papernot" in pdf


def test_doubling_budgets_outside_the_grid_are_refused(run_snakemake, tmp_path):
    """Runs Snakemake itself: a config error must stop Snakemake before anything runs."""
    bad = copy.deepcopy(TINY["expost"])
    bad["table3"]["doubling"]["budgets"] = [0.4, 0.5]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"expost": bad}))
    work = tmp_path / "work"
    done = run_snakemake(work, "tables/expost_table3.csv", "--cores", "1", f"--configfile={path}")
    assert done.returncode != 0
    assert "expost.table3.doubling.budgets" in done.stderr and "[0.5]" in done.stderr
    assert not (work / "results").exists()
