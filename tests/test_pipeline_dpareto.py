"""The DPareto chain run by Snakemake: killed mid-way and restarted, it continues from the last
complete file and ends exactly where an uninterrupted run ends."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from conftest import REPO, snakemake

pytestmark = pytest.mark.slow

TINY = {
    # 8 rounds: the kill at the second proposal leaves six (a warm DPareto round on svt takes ~40 ms)
    # one point a round: a batch round's size follows measured seconds, which a resumed run measures anew
    # (tests/test_pipeline_user_problems.py runs batch rounds)
    "dpareto": {"problems": ["svt"], "runs": 1, "initial_points": 4, "iterations": 8, "batch_size": 1,
                "candidates": 200, "gp_restarts": 1, "reference": "fixed", "batch_rounds": False},
    "problems": {"svt": {"repeats": 10}},
    "random_sampling": {"points": 4, "points_per_job": 2},
}
TARGET = "results/dpareto/svt/dpareto/0/evaluations.parquet"
# DPareto's chain and a peer's (botorch: torch's RNG, seeded per round under a lock): folder -> its rows' method
CHAINS = {"dpareto": "dpareto", "botorch": "botorch"}


def _config(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return str(path)


def _table(work, name):
    return pq.read_table(work / name).to_pandas()


def _chain_outputs(work, problem="svt"):
    """Every Parquet file of the problem's study, without its timing columns (wall, fit, job seconds)."""
    out = {}
    for path in sorted((work / f"results/dpareto/{problem}").rglob("*.parquet")):
        frame = pq.read_table(path).to_pandas()
        out[str(path.relative_to(work))] = frame[[c for c in frame.columns if "seconds" not in c]]
    return out


# A traced adult chain whose trainings stop and resume (dpareto.resume; MOASHA's rungs): the resumed
# run continues trainings from the states kept in the killed run's evaluation files.
TRACED = {
    "dpareto": {"problems": ["adult-logreg-sgd"], "methods": ["dpareto"], "runs": 1, "initial_points": 4,
                "iterations": 12, "batch_size": 1, "candidates": 200, "gp_restarts": 1, "traces": True,
                "resume": True, "path_value": True},
    # the chain continues trainings in these 12 rounds (10 rows)
    "problems": {"adult-logreg-sgd": {"repeats": 1, "ranges": {"epochs": [1, 16], "lot_size": [128, 512]}}},
    "random_sampling": {"points": 4, "points_per_job": 2},
}


def test_kill_and_resume_continues_and_matches_an_uninterrupted_run(tmp_path):
    """Runs Snakemake itself: it kills Snakemake mid-chain (DPareto's and BoTorch's chains, one run) and resumes it."""
    _kill_and_resume(tmp_path, TINY, "svt", CHAINS)


def test_kill_and_resume_with_stops_and_resumptions_matches_an_uninterrupted_run(tmp_path):
    """Runs Snakemake itself: a traced DPareto chain that continues trainings, killed mid-chain and resumed, ends
    with the uninterrupted run's rows, and its continued trainings paid only their added epochs (MOASHA's
    rounds, rebuilt from the rows alone, propose what the incremental ones do: test_resume.py)."""
    chains = _kill_and_resume(tmp_path, TRACED, "adult-logreg-sgd", {"dpareto": "dpareto"})
    for chain, rows in chains.items():
        continued = rows[rows["segment_start"] > 0]
        assert len(continued), f"{chain} continued no training: choose a config whose chain continues one"
        assert not continued["replayed"].any()
        for index, training in rows.groupby("index"):
            training = training.sort_values("epochs")
            assert training["epochs"].tolist() == list(range(1, int(training["epochs"].max()) + 1))   # no gap or repeat
            assert training["cost_epochs"].sum() == training["epochs"].max()


def _kill_and_resume(tmp_path, settings: dict, problem: str, chains: dict[str, str]) -> dict[str, pd.DataFrame]:
    """Kill Snakemake at the first chain's second proposal, resume it, and compare every file of the study with
    an uninterrupted run's. `chains`: folder -> its rows' method; returns each chain's evaluations."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(settings))
    k0, rounds = settings["dpareto"]["initial_points"], settings["dpareto"]["iterations"]
    targets = [f"results/dpareto/{problem}/{chain}/0/evaluations.parquet" for chain in chains]
    first = next(iter(chains))
    work = tmp_path / "killed"
    work.mkdir()
    (work / "config").symlink_to(REPO / "config")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work), *targets,
           "--cores", "1", "--rerun-incomplete", f"--configfile={config}"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    marker = work / f"results/dpareto/{problem}/{first}/0/proposals/1.parquet"
    deadline = time.time() + 600
    while not marker.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert marker.exists(), "the chain never reached its second proposal"
    os.killpg(proc.pid, signal.SIGKILL)  # the whole job tree, mid-way through the chain
    proc.wait()
    assert not (work / targets[0]).exists()
    first_proposal = work / f"results/dpareto/{problem}/{first}/0/proposals/0.parquet"
    mtime = first_proposal.stat().st_mtime

    # A hard kill leaves Snakemake's lock behind: the user runs --unlock once, then starts again.
    assert snakemake(work, *targets, "--unlock", f"--configfile={config}").returncode == 0
    done = snakemake(work, *targets, "--cores", "1", "--rerun-incomplete", f"--configfile={config}")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert first_proposal.stat().st_mtime == mtime  # complete files are not redone
    out = {}
    for (chain, method), target in zip(chains.items(), targets):
        out[chain] = _table(work, target)
        finals = out[chain][out[chain]["trace_final"]] if "trace_final" in out[chain] else out[chain]
        assert finals["method"].tolist() == ["random"] * k0 + [method] * rounds

    fresh_dir = tmp_path / "fresh"
    done = snakemake(fresh_dir, *targets, "--cores", "1", f"--configfile={config}")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    # Same config -> the same files, value for value (timings aside): every point, epsilon, utility,
    # seed and GP prediction of the killed-and-resumed run equals the uninterrupted run's.
    resumed_files, fresh_files = _chain_outputs(work, problem), _chain_outputs(fresh_dir, problem)
    batches = settings["random_sampling"]["points"] // settings["random_sampling"]["points_per_job"]
    # the points and batches, and per chain the initial points, its evaluations and proposals, the gather
    assert resumed_files.keys() == fresh_files.keys()
    assert len(fresh_files) == 1 + batches + len(chains) * (1 + 2 * rounds + 1)
    for name, frame in fresh_files.items():
        pd.testing.assert_frame_equal(resumed_files[name], frame, check_exact=True, obj=name)
    return out


def test_a_damaged_intermediate_file_stops_its_readers_with_one_sentence(tmp_path):
    """A file cut short (here by hand; a full disk or a copy can do it) stops each rule that reads it
    with one sentence naming the file and the fix, not a pyarrow traceback.
    Runs Snakemake itself: it damages an intermediate file and reruns the rules that read it."""
    config = _config(tmp_path)
    work = tmp_path / "work"
    assert snakemake(work, TARGET, "--cores", "1", f"--configfile={config}").returncode == 0
    damaged = work / "results/dpareto/svt/dpareto/0/evals/1.parquet"
    times = damaged.stat()
    damaged.write_bytes(damaged.read_bytes()[:100])
    os.utime(damaged, ns=(times.st_atime_ns, times.st_mtime_ns))  # nothing downstream looks outdated
    # the gather (a script job), then a proposal round (a run: rule, in Snakemake's own process)
    for rerun, log in [(TARGET, "logs/dpareto/svt/dpareto/0/gather.log"),
                       ("results/dpareto/svt/dpareto/0/proposals/2.parquet", "logs/dpareto/svt/dpareto/0/proposals/2.log")]:
        (work / rerun).unlink()
        done = snakemake(work, rerun, "--cores", "1", f"--configfile={config}")
        out = done.stdout + done.stderr
        assert done.returncode != 0
        sentence = ("results/dpareto/svt/dpareto/0/evals/1.parquet is not a readable Parquet file (")
        assert sentence in out and "delete it and rerun the workflow" in out, out[-3000:]
        assert sentence in (work / log).read_text()
        assert "Traceback" not in out and "ArrowInvalid" not in out, out[-3000:]
        assert not (work / rerun).exists()


@pytest.mark.xdist_group("paper-dry-run")
def test_paper_config_dag_builds(paper_dry_run):
    done = paper_dry_run
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-2000:]
    assert "RecursionError" not in out
    # 5 problems x 256 proposals and evaluations; 5,000-point comparison runs come with the statistics.
    assert "bo_propose             1280" in out or " 1280" in out


@pytest.mark.parametrize("traces", [False, True])
@pytest.mark.parametrize("part_size, per_part", [("iterations", 3), ("budget", 4 + 3)])
def test_table2_parts_have_the_configured_size(run_snakemake, tmp_path, part_size, per_part, traces):
    """statistics.part_size: k points per part (the paper's text) or k0 + k (the original code's):
    the comparison sample Snakemake plans is parts x that many points (dry run, one point per job);
    with dpareto.traces, half as many again (its parts are cut at the chain's training cost).
    Runs Snakemake itself: dry runs of four part-size settings."""
    cfg = {"dpareto": {"problems": ["adult-logreg-sgd"], "initial_points": 4, "iterations": 3, "traces": traces},
           "statistics": {"comparison_parts": 2, "part_size": part_size},
           "random_sampling": {"points": 4, "points_per_job": 1}}
    path = tmp_path / "parts.yaml"
    path.write_text(yaml.safe_dump(cfg))
    target = "results/dpareto/adult-logreg-sgd/comparison/0/evaluations.parquet"
    done = run_snakemake(tmp_path / "work", target, "-n", "--cores", "1", "--configfile", str(path))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    planned = re.search(r"^evaluate_random_batch\s+(\d+)", done.stdout + done.stderr, re.MULTILINE)
    points = 2 * per_part
    assert planned and int(planned.group(1)) == (points + points // 2 if traces else points)
