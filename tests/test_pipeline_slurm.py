"""The pipeline on a real SLURM: the tiny config's `all` through `--profile profiles/slurm` against the
single-node cluster that profiles/slurm/local-slurm starts (as root; CI here runs as root). Every rule
of the tiny config's `all` runs, at fewer instances than tests/test_pipeline_all_tiny.py runs them
(SLURM_TINY: each SLURM job costs seconds of queueing and a Snakemake start on the node). The
training jobs are SLURM jobs, the rest stays local; a preempted (requeued) job is not lost; a job
that fails on the cluster shows its rule and its log as locally.

Without root and without that cluster this module is skipped, with the reason in pytest's summary."""
from __future__ import annotations

import re
import shutil
import time

import pytest
import yaml

import local_slurm
from conftest import REPO
from tiny import TINY

# one worker holds the cluster: it starts it once and stops it after the module's last test
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]

# Every study but the audit (one more job of an ordinary script rule; the tiny all runs it), with one
# peer beside DPareto (every peer's rounds run as DPareto's do, in the Snakemake process on this host):
# every rule of TINY's `all` (the same 44 rules in a dry run), each at fewer instances: one chain problem
# with two rounds, one Taylor dataset and loss, one Table 3 dataset (91 jobs against 239).
SLURM_TINY = {
    **TINY, "studies": ["dpareto", "illustrations", "batch", "expost", "proposetest", "taylor", "release"],
    "dpareto": {**TINY["dpareto"], "problems": ["adult-logreg-sgd"],
                "methods": ["dpareto", "botorch"], "iterations": 2},
    "taylor": {**TINY["taylor"], "datasets": ["adult"], "losses": ["logistic"]},
    "expost": {**TINY["expost"], "table3": {**TINY["expost"]["table3"], "datasets": ["twitter"]}},
}

# What the cluster must run (the jobs that train or simulate) and what must stay on this host.
CLUSTER_RULES = {"dataset_split", "reddit_histogram", "evaluate_batch", "evaluate_random_batch", "bo_evaluate",
                 "illustration_evaluate", "illustration_surfaces", "expost_invocations", "expost_thread_trials",
                 "expost_ml_candidates", "expost_ml_trials", "proposetest_simulation", "proposetest_adult",
                 "taylor_measure", "query", "front_fresh", "release", "audit"}
LOCAL_RULES = {"bo_propose", "bo_initial", "bo_gather", "gather_evaluations", "random_points", "uniform_points",
               "grid_points", "illustration_points", "embedded_wheel", "table2", "overhead_table", "front_quality",
               "batch_vs_sequential", "fig_oracles", "fig_surfaces", "fig5", "fig6", "fig_fronts", "front_report",
               "expost_fig1", "expost_thread_table", "expost_table3", "proposetest_figures", "taylor_fig1_table1",
               "taylor_fig2", "release_report", "front_cost", "all"}


@pytest.fixture(scope="module")
def slurm():
    """The local cluster: started here if need be (and then stopped after), else skipped with why."""
    why = local_slurm.unavailable()
    if why:
        pytest.skip(why)
    started = local_slurm.start()
    yield
    if started:
        local_slurm.stop()


def test_the_tiny_config_runs_end_to_end_on_slurm(slurm, tmp_path):
    """Runs Snakemake itself: through the local SLURM, with a job preempted on the way."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(SLURM_TINY))
    work = tmp_path / "work"
    done, cluster = local_slurm.snakemake_preempted(work, "all", f"--configfile={config}")
    assert done.returncode == 0, done.stdout[-5000:]
    for n in range(1, 9):
        assert (work / f"figures/fig{n}.pdf").read_bytes().startswith(b"%PDF"), n
    for table in ("table2", "overhead", "expost_table1", "taylor_table1"):
        assert (work / f"tables/{table}.csv").exists(), table

    # What ran where: Snakemake's own record, and SLURM's.
    local = set(re.findall(r"^localrule (\w+):", done.stdout, re.MULTILINE))
    remote = set(re.findall(r"^rule (\w+):", done.stdout, re.MULTILINE))
    jobs = local_slurm.sacct(cluster["since"])
    on_cluster = {re.match(r"rule_(\w+?)_wildcards|rule_(\w+)", j["comment"]).group(1) or j["comment"][5:]
                  for j in jobs}
    assert remote == on_cluster <= CLUSTER_RULES, (remote, on_cluster)
    assert local <= LOCAL_RULES and "bo_propose" in local and not local & CLUSTER_RULES, local
    assert {"evaluate_batch", "bo_evaluate", "taylor_measure"} <= on_cluster

    # The preempted job went back to the queue, ran again, and its output is there.
    requeued = cluster["requeued"]
    assert requeued, "no evaluation job was running to requeue"
    assert requeued["state"] != "RUNNING" and requeued["restarts"] == 1, requeued   # stopped, to run again
    history = [j["state"] for j in jobs if j["id"] == requeued["id"]]   # sacct may keep the first allocation
    assert history[-1] == "COMPLETED" and set(history) <= {"REQUEUED", "COMPLETED"}, history
    wildcards = requeued["comment"].split("_wildcards_")[1].split("_")   # problem, method, run, batch
    rerun = work / "results/dpareto" / wildcards[0] / wildcards[1] / wildcards[2] / "evals" / f"{wildcards[3]}.parquet"
    assert rerun.exists(), rerun

    # Every job asked for at least the memory it used (sacct's peak RSS of its steps).
    for job in (j for j in jobs if j["state"] == "COMPLETED"):
        asked = float(job["req_mem"].rstrip("Mn"))
        assert local_slurm.max_rss_mb(job["id"]) < asked, job
    cluster_jobs = sum(1 for j in jobs if j["state"] == "COMPLETED")
    print(f"slurm: all in {cluster['wall']:.0f} s; {cluster_jobs} SLURM jobs ({', '.join(sorted(on_cluster))}); "
          f"{done.stdout.count('localrule ')} local jobs ({', '.join(sorted(local))})")


def test_a_job_failing_on_the_cluster_shows_its_rule_and_log(slurm, tmp_path):
    """Runs Snakemake itself: a job failing on the local SLURM."""
    module = REPO / "tests/user_problems/gaussian_mean.py"
    config = tmp_path / "broken.yaml"
    config.write_text(yaml.safe_dump({
        "studies": ["dpareto"],
        "dpareto": {"problems": ["broken"], "initial_points": 2, "iterations": 1},
        "problems": {"broken": {"oracle": f"{module}:UtilityAboveOne", "repeats": 1,
                                "domain": {"sigma": {"low": 0.01, "high": 1.0}, "clip": {"low": 0.1, "high": 1.0}}}},
        "random_sampling": {"points": 2, "points_per_job": 2, "uniform": False},
    }))
    target = "results/dpareto/broken/random/0/evaluations.parquet"
    done = local_slurm.snakemake(tmp_path / "work", target, f"--configfile={config}", "--retries", "0")
    assert done.returncode != 0
    out = done.stdout
    assert "Error in rule evaluate_random_batch" in out, out[-4000:]
    assert "The utility oracle of broken returned" in out, out[-4000:]   # the job's log, printed here
    assert "logs/dpareto/broken/random/0/evals/0.log" in out


def test_a_problem_in_its_own_environment_is_evaluated_on_slurm(slurm, tmp_path, monkeypatch):
    """An oracle that needs numpy >= 2, in its own environment (built when the config is loaded, on this
    host), evaluated by SLURM jobs that start its worker on the node, as any problem's evaluations are.
    Runs Snakemake itself: through the local SLURM, with an environment of its own."""
    from test_environments import DOMAIN, NEEDS_NUMPY2, ORACLE, _wheel

    from dptradeoff.problems.tables import read_frame

    house = tmp_path / "wheelhouse"
    house.mkdir()
    shutil.copy(sorted((REPO / ".venv" / "test-wheels").glob("numpy-2*.whl"))[0], house)
    _wheel(house, "needs-numpy2", "0.1", ["numpy>=2"], {"needs_numpy2/__init__.py": NEEDS_NUMPY2})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    monkeypatch.setenv("DPTRADEOFF_ENVS", str(tmp_path / "envs"))
    requirements = tmp_path / "centroid.txt"
    requirements.write_text("needs-numpy2==0.1\n")
    config = tmp_path / "centroid.yaml"
    config.write_text(yaml.safe_dump({
        "studies": ["dpareto"],
        "dpareto": {"problems": ["centroid"], "initial_points": 4, "iterations": 2, "candidates": 200, "gp_restarts": 1,
                    "batch_rounds": False},   # one point a round: a job a point, as this test counts them
        "problems": {"centroid": {"oracle": ORACLE, "environment": str(requirements), "dataset": "adult",
                                  "repeats": 2, "domain": DOMAIN}},
        "random_sampling": {"points": 4, "points_per_job": 2, "uniform": False},
    }))
    since = time.strftime("%Y-%m-%dT%H:%M:%S")
    done = local_slurm.snakemake(tmp_path / "work", "all", f"--configfile={config}")
    assert done.returncode == 0, done.stdout[-5000:]
    on_cluster = {j["comment"].split("_wildcards")[0][5:] for j in local_slurm.sacct(since) if j["state"] == "COMPLETED"}
    assert {"evaluate_random_batch", "bo_evaluate"} <= on_cluster, on_cluster
    chain = read_frame(str(tmp_path / "work/results/dpareto/centroid/dpareto/0/evaluations.parquet"))
    assert len(chain) == 6 and chain["failure"].isna().all() and (chain["epsilon"] == chain["eps"]).all()
