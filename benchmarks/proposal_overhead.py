"""Time of one DPareto proposal step (q = 1) at 16, 64 and 256 observed points on the 5-D
adult-logreg-sgd domain, in process (GP fits + acquisition maximisation), as a chain runs them:
16 consecutive rounds from each size on, with the default config's settings (its privacy model,
acquisition and schedule: full ML-II restarts in the first `gp_full_refits_first` rounds and every
`gp_refit_every`-th round, the rounds between refined from the previous round's hyperparameters),
beside the paper's algorithm as GPflowOpt ran it (privacy GP, HVPoI, full restarts every round)
measured in the same run, and the one-off start-up a workflow run pays in its first round
(importing TensorFlow/GPflow, tracing the GP graph) in a fresh interpreter.
The paper reports ~45 s for its whole 16 + 256 run, ~0.17 s per iteration. With epoch traces
(`dpareto.traces`) each training adds a row per epoch: the default's rounds are timed again at 256
trainings whose every epoch up to the default config's 16 is a row (the GPs see `gp_points` of them).

Run: ./in-env python benchmarks/proposal_overhead.py   (last line: proposal_seconds_at_256=<x>)
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import threadpoolctl
import yaml

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo.propose import Context, Settings, propose
from dptradeoff.privacy import dpsgd
from dptradeoff.problems import get_problem

PROBLEM = "adult-logreg-sgd"
N_TRAIN = 32561
ACCOUNTING = get_problem(PROBLEM).oracle.conversion   # the accountant the proposals use: the rows' epsilons too
ERROR_FLOOR = 7841 / 32561   # Adult's training majority-class error (the utility floor)
ROUNDS = 16
START_UP = "import time; t = time.perf_counter(); from dptradeoff.bo import gp; gp.fitter(5); print(time.perf_counter() - t)"


def synthetic_evaluations(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Points from the paper's sampling distributions, their real epsilon (the privacy oracle, Adult's
    32,561 training examples) and a smooth, noisy error of realistic range in place of training.
    (A closed-form stand-in for epsilon, exactly linear in the logs of the inputs, drives the privacy
    GP's ML-II to lengthscales ~1e7, where its likelihood is numerically flat and every line search
    fails: slower rounds than a real chain's, for a reason a real chain does not have.)"""
    problem = get_problem(PROBLEM)
    points = sample(problem, n, rng)
    points["epsilon"] = [dpsgd.epsilon(N_TRAIN, int(p.lot_size), int(p.epochs), float(p.noise), problem.delta, ACCOUNTING)
                         for p in points.itertuples()]
    points["error"] = np.clip(0.15 + 0.2 / (1 + points["epsilon"]) + 0.02 * rng.standard_normal(n), 0.01, 0.99)
    points["index"], points["trace_final"] = np.arange(n), True
    return points


def traced_evaluations(n: int, rng: np.random.Generator, max_epochs: int = 16) -> pd.DataFrame:
    """`synthetic_evaluations` with every training's epochs (at most `max_epochs`, as the default config's
    adult domain) traced: a row per epoch with that epoch's real epsilon, its own point last."""
    problem = get_problem(PROBLEM)
    points = sample(problem, n, rng)
    points["epochs"] = np.minimum(points["epochs"], max_epochs)
    rows = []
    for index, p in enumerate(points.itertuples(index=False)):
        for e in range(1, int(p.epochs) + 1):
            eps = dpsgd.epsilon(N_TRAIN, int(p.lot_size), e, float(p.noise), problem.delta, ACCOUNTING)
            rows.append({**p._asdict(), "epochs": e, "epsilon": eps, "index": index, "trace_final": e == p.epochs,
                         "error": float(np.clip(0.15 + 0.2 / (1 + eps) + 0.02 * rng.standard_normal(), 0.01, 0.99))})
    return pd.DataFrame(rows)


def first(evals: pd.DataFrame, trainings: int) -> pd.DataFrame:
    """Every row of the first `trainings` trainings."""
    return evals[evals["index"] < trainings]


def chain_rounds(evals: pd.DataFrame, n: int, settings: Settings) -> list[tuple[float, float, float]]:
    """(seconds, GP-fit seconds, acquisition seconds) of rounds with n .. n + ROUNDS - 1 observed
    points, each started from the state the round before ended with."""
    problem = get_problem(PROBLEM)
    context = Context(N_TRAIN, ERROR_FLOOR)
    state = propose(problem, first(evals, n - 1), 1, settings, np.random.default_rng(0), None, 0, context=context).gp_state
    seconds = []
    for r in range(n, n + ROUNDS):
        start = time.perf_counter()
        proposal = propose(problem, first(evals, r), 1, settings, np.random.default_rng(r), state, r - 16, context=context)
        seconds.append((time.perf_counter() - start, proposal.points["fit_seconds"].iloc[0],
                        proposal.points["acquisition_seconds"].iloc[0]))
        state = proposal.gp_state
    return seconds


def main() -> None:
    threadpoolctl.threadpool_limits(1)   # as the bo_propose rule runs (threads: 1)
    config = yaml.safe_load(open("config/config.yaml"))
    ours = Settings.from_config(config["dpareto"], config["statistics"])
    previous = Settings(candidates=ours.candidates, gp_restarts=ours.gp_restarts, reference=ours.reference, refit_every=1,
                        inputs=ours.inputs)
    evals = synthetic_evaluations(256 + ROUNDS, np.random.default_rng(0))
    start_up = float(subprocess.run([sys.executable, "-c", START_UP], capture_output=True, text=True, check=True).stdout)
    propose(get_problem(PROBLEM), evals.iloc[:16], 1, ours, np.random.default_rng(0),
            context=Context(N_TRAIN, ERROR_FLOOR))   # this process's start-up (TensorFlow, the epsilon table)
    print(f"default: privacy {ours.privacy_model}, acquisition {ours.acquisition}")
    print(f"{'observed':>8} {'ours: median':>13} {'(GP fits':>9} {'acq. max)':>10} {'max':>7} "
          f"{'paper (full restarts every round)':>38}")
    results = {}
    for n in (16, 64, 256):
        mine = chain_rounds(evals, n, ours)
        theirs = [s for s, _, _ in chain_rounds(evals, n, previous)[:4]]   # 4 rounds: the old schedule's median
        total, fit, acquisition = (statistics.median(column) for column in zip(*mine))
        results[n] = (total, statistics.median(theirs))
        print(f"{n:8d} {total:12.3f}s {fit:8.3f}s {acquisition:9.3f}s {max(s for s, _, _ in mine):6.2f}s "
              f"{statistics.median(theirs):37.3f}s")
    traced = traced_evaluations(256 + ROUNDS, np.random.default_rng(1))
    with_traces = chain_rounds(traced, 256, ours)
    traced_256 = statistics.median(s for s, _, _ in with_traces)
    rows_256 = len(first(traced, 256))
    print(f"{256:8d} trainings with traces ({rows_256} rows, the GPs see {ours.gp_points}): {traced_256:.3f}s median, "
          f"max {max(s for s, _, _ in with_traces):.2f}s")
    ours_256, previous_256 = results[256]
    print(f"schedule: full ML-II restarts ({ours.gp_restarts} starts) in the first {ours.full_refits_first} rounds and "
          f"every {ours.refit_every} rounds, one refinement between")
    print(f"start-up paid once per workflow run (import TensorFlow/GPflow, trace the GP graph): {start_up:.1f} s")
    print(f"at 256 points: {ours_256:.3f} s per round = {ours_256 / 0.17:.2f}x the paper's ~0.17 s per iteration, "
          f"{previous_256 / ours_256:.1f}x faster than the paper's algorithm with full restarts every round ({previous_256:.2f} s)")
    print(f"with traces at 256 trainings: {traced_256:.3f} s per round, {traced_256 / ours_256:.2f}x the untraced round")
    print(f"proposal_seconds_at_256={ours_256:.3f} traced_proposal_seconds_at_256={traced_256:.3f}")


if __name__ == "__main__":
    main()
