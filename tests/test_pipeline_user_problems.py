"""A problem of your own through the real workflow: random sampling, a DPareto chain with a failing
point, the front query trained, the per-problem figure and table, and `dptradeoff front`."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import read

HERE = Path(__file__).parent
MODULE = str(HERE / "user_problems" / "gaussian_mean.py")
DOMAIN = {"sigma": {"low": 0.001, "high": 1.0, "log": True}, "clip": {"low": 0.1, "high": 1.0}}
CONFIG = {
    "studies": ["dpareto"],
    # one point a round and a question of the least trainings' worth (question_seconds 0), though these oracles are
    # cheap: batch rounds and questions of seconds are the Laplace mean example's test below
    "dpareto": {"problems": ["gaussian-mean", "flaky"], "initial_points": 6, "iterations": 6, "candidates": 300,
                "gp_restarts": 1, "gp_refit_every": 1, "batch_rounds": False, "question_seconds": 0},
    "problems": {
        "gaussian-mean": {"oracle": MODULE, "delta": 1e-6, "utility": "closeness", "repeats": 2, "domain": DOMAIN,
                          "queries": {"epsilon": [1.0], "utility": [0.5]}},
        "flaky": {"oracle": f"{MODULE}:Flaky", "options": {"fail_above": 0.6}, "delta": 1e-6, "repeats": 2,
                  "domain": DOMAIN, "sampling": {"clip": {"kind": "uniform", "low": 0.1, "high": 1.0}}},
    },
    "random_sampling": {"points": 10, "points_per_job": 5, "uniform": False},
}


def _front_cli(work: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dptradeoff", "front", f"--configfile={config}", *args], cwd=work,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_problem_of_your_own_runs_through_random_dpareto_and_the_front_query(run_snakemake, tmp_path):
    """Runs Snakemake itself: problems of your own, one of them failing on purpose."""
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    work = tmp_path / "work"
    done = run_snakemake(work, "all", "--cores", "2", f"--configfile={config}", timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    chain = read_frame(str(work / "results/dpareto/flaky/dpareto/0/evaluations.parquet"))
    assert len(chain) == 12                                    # 6 initial + 6 BO, though points failed
    random = read_frame(str(work / "results/dpareto/flaky/random/0/evaluations.parquet"))
    failed = random[random["failure"].notna()]
    assert len(failed) and (failed["clip"] > 0.6).all() and failed["utility"].isna().all()
    assert failed["failure"].str.startswith("utility oracle: FloatingPointError: training diverged").all()

    # the declared queries steer every 4th round (dpareto.query_every), in turn; the region is the problem's own
    proposals = [read_frame(str(work / f"results/dpareto/gaussian-mean/dpareto/0/proposals/{r}.parquet")).iloc[0]
                 for r in range(6)]
    assert [p["steers"] for p in proposals] == ["front"] * 3 + ["epsilon query 1"] + ["front"] * 2
    assert all(0 < p["region_low"] < p["region_high"] for p in proposals)
    assert (proposals[0]["region_low"], proposals[0]["region_high"]) != (0.01, 10.0)   # derived, not statistics.region
    answer = read_frame(str(work / "results/dpareto/gaussian-mean/query/eps1.parquet")).iloc[0]
    assert answer["question"] == "epsilon <= 1" and answer["epsilon"] <= 1.0
    # the one rule: question_seconds 0 leaves the least trainings' worth (dpareto.question_trainings, 200), searched,
    # then stated by fresh trainings after the choice; retrained R = 2 times by the rule
    fresh = int(answer["fresh_trainings"])
    assert fresh >= 19 and len(answer["trainings"]) == fresh and answer["search_trainings"] > 0
    assert answer["probability_source"].startswith(f"{fresh} fresh trainings after it was chosen")
    assert answer["predicted_utility"] == pytest.approx(np.mean(answer["trainings"]))
    assert "the 0 s asked buy fewer than the least trainings" in answer["budget"]
    assert len(answer["utility_runs"]) == 2 and 0 <= answer["utility"] <= 1             # the realised training
    assert answer["nearest_epsilon"] > 0 and answer["epsilon"] >= 1.0 * (1 - 1e-3)     # spent to the level
    assert read_frame(str(work / "results/dpareto/gaussian-mean/query/utility0.5.parquet"))["question"].iloc[0] == "utility >= 0.5"
    for problem in ("gaussian-mean", "flaky"):
        assert (work / f"figures/front-{problem}.pdf").read_bytes().startswith(b"%PDF")
    table = read(str(work / "tables/front-gaussian-mean.csv"))
    assert {"front", "query: epsilon <= 1", "query: utility >= 0.5"} <= set(table["kind"])
    assert (work / "tables/overhead.csv").exists() and (work / "figures/fig5.pdf").exists()
    assert not (work / "tables/table2.csv").exists()           # no paper problem in this study

    listed = _front_cli(work, config, "--problem", "gaussian-mean")
    assert listed.returncode == 0, listed.stderr
    assert "Pareto front of gaussian-mean" in listed.stdout and "sigma" in listed.stdout
    asked = _front_cli(work, config, "--problem", "gaussian-mean", "--epsilon", "0.5")
    assert asked.returncode == 0, asked.stderr
    assert "suggested: clip=" in asked.stdout and "(exact)" in asked.stdout and "answered now" in asked.stdout
    assert "fresh trainings made after it was chosen" in asked.stdout
    declared = _front_cli(work, config, "--problem", "gaussian-mean", "--epsilon", "1")
    # a declared question: the query rule's answer, from its file, as the front table has it
    assert declared.returncode == 0 and "the query rule's answer" in declared.stdout, declared.stdout
    assert f"rests on {fresh} fresh trainings" in declared.stdout and "trainings searching" in declared.stdout
    missing = _front_cli(work, config, "--problem", "flaky", "--run", "3")
    assert missing.returncode == 2 and "results/dpareto/flaky/dpareto/3/evaluations.parquet does not exist" in missing.stderr


def test_a_bad_problem_entry_stops_the_workflow_with_one_sentence(run_snakemake, tmp_path):
    """Runs Snakemake itself: a bad problem entry must stop a dry run."""
    bad = {**CONFIG, "problems": {"mine": {"oracle": f"{MODULE}:NoEpsilon", "domain": DOMAIN}},
           "dpareto": {"problems": ["mine"]}}
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(bad))
    done = run_snakemake(tmp_path / "work", "-n", f"--configfile={config}")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "problems.mine.oracle: " in output and "has no epsilon(point, *, n, delta) method" in output
    assert "Traceback" not in output
    unknown = {**CONFIG, "dpareto": {"problems": ["nobody"]}, "problems": {}}
    config.write_text(yaml.safe_dump(unknown))
    done = run_snakemake(tmp_path / "work", "-n", f"--configfile={config}")
    assert done.returncode != 0 and "dpareto.problems names 'nobody'" in done.stdout + done.stderr


@pytest.mark.slow
def test_the_opacus_example_config_runs_at_a_smaller_scale(run_snakemake, tmp_path):
    """config/examples/opacus-cnn.yaml as shipped (its oracle file found in the project), with smaller
    budgets merged over it: random sampling, the chain, the query trained, the front figure.
    Runs Snakemake itself: config/examples/opacus-cnn.yaml as shipped."""
    smaller = {
        "dpareto": {"initial_points": 3, "iterations": 2, "candidates": 200, "gp_restarts": 1, "question_trainings": 1},
        "problems": {"opacus-cnn": {"options": {"train_rows": 64, "test_rows": 64}, "queries": {"epsilon": [3.0]},
                                    "domain": {"epochs": {"low": 1, "high": 2, "integer": True}}}},
        "random_sampling": {"points": 4, "points_per_job": 2},
    }
    override = tmp_path / "smaller.yaml"
    override.write_text(yaml.safe_dump(smaller))
    example = Path(__file__).parent.parent / "config/examples/opacus-cnn.yaml"
    work = tmp_path / "work"
    done = run_snakemake(work, "all", "--cores", "2", "--configfile", str(example), str(override), timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    chain = read_frame(str(work / "results/dpareto/opacus-cnn/dpareto/0/evaluations.parquet"))
    assert chain["trace_final"].sum() == 5 and chain["failure"].isna().all() and chain["utility"].between(0, 1).all()
    # the default config's epoch traces: a 2-epoch training adds its first epoch as a row (utility_trace)
    for _, training in chain.groupby("index"):
        assert training["epochs"].tolist() == list(range(1, int(training["epochs"].max()) + 1))
    assert (chain["source_label"].str.contains("embedded")).all()
    answer = read_frame(str(work / "results/dpareto/opacus-cnn/query/eps3.parquet")).iloc[0]
    assert answer["epsilon"] <= 3.0 and 0 <= answer["utility"] <= 1
    # question_trainings 1: the budget buys few trainings of a CNN; what it bought states the answer, and fewer than
    # 19 are said to be too few for an interval
    fresh = int(answer["fresh_trainings"])
    assert fresh == len(answer["trainings"]) and (0 <= answer["predicted_utility"] <= 1 if fresh else
                                                  np.isnan(answer["predicted_utility"]))
    assert fresh >= 19 or "fewer than the 19 an interval needs" in answer["search_note"]
    assert (work / "figures/front-opacus-cnn.pdf").read_bytes().startswith(b"%PDF")


def _planned_chains(out: str) -> dict[str, set[str]]:
    """{problem: the chains a dry run plans for it} (every chain folder a job of the plan names)."""
    planned: dict[str, set[str]] = {}
    for problem, folder in re.findall(r"results/dpareto/([\w-]+)/([\w-]+)/\d+/", out):
        if folder not in ("random", "uniform", "comparison", "query") and not folder.startswith("grid"):
            planned.setdefault(problem, set()).add(folder)
    return planned


def test_a_problem_of_your_own_runs_dpareto_alone_unless_it_names_more_methods(run_snakemake, tmp_path):
    """The README's example gets DPareto beside random sampling, not dpareto.methods' four optimisers
    (which a built-in problem still runs); problems.<name>.methods adds the peers it names. Dry runs.
    Runs Snakemake itself: dry runs of two method settings."""
    config = tmp_path / "mine.yaml"
    study = {**CONFIG, "dpareto": {**CONFIG["dpareto"], "problems": ["gaussian-mean", "svt"],
                                   "methods": ["dpareto", "optuna-tpe", "botorch"]}}
    config.write_text(yaml.safe_dump(study))
    done = run_snakemake(tmp_path / "work", "all", "-n", f"--configfile={config}")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert _planned_chains(out) == {"gaussian-mean": {"dpareto"}, "svt": {"dpareto", "optuna-tpe", "botorch"}}
    assert re.search(r"^bo_propose\s+24$", out, re.MULTILINE)            # 6 rounds x (1 + 3) chains
    fig5 = re.search(r"^(?:local)?rule fig5:\n    input: (.*)$", out, re.MULTILINE).group(1)
    assert "svt/optuna-tpe/" in fig5 and "gaussian-mean/optuna-tpe/" not in fig5

    asked = {**study, "problems": {**study["problems"],
                                   "gaussian-mean": {**study["problems"]["gaussian-mean"], "methods": ["dpareto", "optuna-gp"]}}}
    config.write_text(yaml.safe_dump(asked))
    done = run_snakemake(tmp_path / "work", "all", "-n", f"--configfile={config}")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert _planned_chains(out) == {"gaussian-mean": {"dpareto", "optuna-gp"}, "svt": {"dpareto", "optuna-tpe", "botorch"}}
    assert re.search(r"^bo_propose\s+30$", out, re.MULTILINE)


@pytest.mark.slow
def test_the_laplace_mean_example_finds_its_region_and_answers_by_the_clock(run_snakemake, tmp_path):
    """config/examples/laplace-mean.yaml as shipped (its CSV written by examples/laplace_mean.py), fewer rounds and
    seconds: the region is derived from the problem, far below statistics.region; the queries steer every 4th
    round; a training is cheaper than a proposal, so rounds after the first train batches in one job each
    (bo.batch_rounds); each question is answered by the clock, stated by its fresh trainings, in the front table;
    the figure shades the region. Runs Snakemake itself: the example a practitioner copies, its own-file dataset
    without a label."""
    work = tmp_path / "work"
    csv = work / "data" / "ages.csv"
    written = subprocess.run([sys.executable, str(Path(__file__).parent.parent / "examples/laplace_mean.py"), str(csv)],
                             capture_output=True, text=True, timeout=300)
    assert written.returncode == 0 and "32561 ages" in written.stdout, written.stderr[-2000:]
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(yaml.safe_dump({"dpareto": {"initial_points": 6, "iterations": 8, "candidates": 500,
                                                   "gp_restarts": 1, "question_seconds": 2},
                                       "random_sampling": {"points": 8}}))
    example = Path(__file__).parent.parent / "config/examples/laplace-mean.yaml"
    done = run_snakemake(work, "all", "--cores", "2", "--configfile", str(example), str(smaller), timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    proposals = [read_frame(str(work / f"results/dpareto/laplace-mean/dpareto/0/proposals/{r}.parquet")).iloc[0]
                 for r in range(8)]
    assert [p["steers"] for p in proposals] == ["front"] * 3 + ["epsilon query 0.001"] + ["front"] * 3 + ["utility query 0.99"]
    assert all(p["region_low"] < 1e-3 for p in proposals)           # far below statistics.region's 0.01
    chain = read_frame(str(work / "results/dpareto/laplace-mean/dpareto/0/evaluations.parquet"))
    assert chain["utility"].between(0, 1).all() and (chain["delta"] == 0).all()
    sizes = [int(p["batch_size"]) if "batch_size" in p else 1 for p in proposals]
    assert sizes[0] == 1 and max(sizes) > 1                       # nothing measured before the first round
    batch = read_frame(str(work / f"results/dpareto/laplace-mean/dpareto/0/evals/{sizes.index(max(sizes))}.parquet"))
    assert len(batch) == max(sizes) and batch["index"].is_unique and (batch["batch_size"] == max(sizes)).all()
    assert len(chain) == 6 + sum(sizes) and chain["index"].is_unique
    for question, file in (("epsilon <= 0.001", "eps0.001"), ("utility >= 0.99", "utility0.99")):
        answer = read_frame(str(work / f"results/dpareto/laplace-mean/query/{file}.parquet")).iloc[0]
        fresh = int(answer["fresh_trainings"])
        # 2 s: the search's 75 % of them less the measuring, then what is left buys the fresh trainings (19 at least)
        assert fresh >= 19 and len(answer["trainings"]) == fresh and answer["budget"].startswith("time: 2 s")
        assert answer["probability_source"].startswith(f"{fresh} fresh trainings after it was chosen")
        assert answer["interval_low"] < answer["predicted_utility"] < answer["interval_high"]
        assert answer["search_trainings"] > 200 and answer["added_trainings"] == 0
    assert answer["epsilon"] > 0 and answer["reach_probability"] == pytest.approx(
        np.mean(np.asarray(answer["trainings"]) >= 0.99))
    assert read_frame(str(work / "results/dpareto/laplace-mean/query/eps0.001.parquet"))["epsilon"].iloc[0] <= 0.001
    table = read(str(work / "tables/front-laplace-mean.csv"))
    row = table[table["kind"] == "query: epsilon <= 0.001"].iloc[0]
    assert f"({int(row['fresh_trainings'])} in all, mean" in str(row["trainings"])
    caption = (work / "tables/front-laplace-mean.md").read_text()
    searched = proposals[-1]
    proposed = [p["predicted_epsilon"] for p in proposals]     # the shaded region stops where the proposals did
    low, high = max(searched["region_low"], min(proposed)), min(searched["region_high"], max(proposed))
    assert (f"Region of interest: the region DPareto's chain searched in its last round (derived from the problem), "
            f"within the epsilons its proposals had, epsilon in [{low:.3g}, {high:.3g}]") in caption
    assert "Epsilon in the chain's acquisition: exact" in caption and "WARNING" not in caption
    assert f"Batch rounds (a point cheaper to evaluate than a round to choose): {sum(s > 1 for s in sizes)} of 8 rounds" in caption
