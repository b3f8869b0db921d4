"""The audit of an algorithm of your own through the workflow: a claimed epsilon that its training breaks
gets one loud sentence in the audit table, the front table and both commands (docs/audit.md)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dptradeoff.stats.tables import read

HERE = Path(__file__).parent
CONFIG = {
    "studies": ["dpareto", "audit"],
    "dpareto": {"problems": ["memorizer"], "initial_points": 3, "iterations": 1, "candidates": 100, "gp_restarts": 1},
    "problems": {"memorizer": {"oracle": str(HERE / "user_problems" / "memorizer.py"), "dataset": "adult",
                               "delta": 1e-5, "repeats": 1, "domain": {"noise": {"low": 0.5, "high": 5.0}}}},
    "random_sampling": {"points": 3, "points_per_job": 3, "uniform": False},
    "audit": {"problems": ["memorizer"], "front_points": 1, "canaries": 200, "guesses": 100},
}


def _cli(work: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dptradeoff", *args, f"--configfile={config}"], cwd=work,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_false_epsilon_is_exposed_in_the_audit_the_front_table_and_the_commands(run_snakemake, tmp_path):
    """Runs Snakemake itself: its oracle breaks its claimed epsilon on purpose, which no shared pipeline may hold."""
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    work = tmp_path / "work"
    done = run_snakemake(work, "all", "--cores", "2", f"--configfile={config}")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    audit = read(str(work / "tables/audit-memorizer.csv"))
    assert len(audit) == 1 and audit["audit"].iloc[0].startswith("black-box one run")
    assert (audit["epsilon_lb"] > audit["epsilon"]).all() and audit["trainings"].iloc[0] == 1
    assert audit["confidence"].iloc[0] == 0.95                 # one point: no Bonferroni correction
    for table in ("tables/audit-memorizer.md", "tables/front-memorizer.md"):
        assert "PRIVACY VIOLATION: memorizer's audit proves" in (work / table).read_text(), table
    assert "PRIVACY VIOLATION" in (work / "logs/audit/memorizer.log").read_text()
    front = _cli(work, config, "front", "--problem", "memorizer")
    assert front.returncode == 0 and "PRIVACY VIOLATION: memorizer's audit proves" in front.stdout, front.stderr
    asked = _cli(work, config, "audit", "--problem", "memorizer", "--point", "noise=1")
    assert asked.returncode == 0, asked.stderr
    assert "PRIVACY VIOLATION: memorizer's audit proves" in asked.stdout and "0.05" in asked.stdout
