"""Time of one DPareto proposal step (q = 1) at 16, 64 and 256 observed points, on the 5-D
adult-logreg-sgd domain: in-process (GP fits with restarts + HVPoI maximisation) and the whole
job as Snakemake runs it (a fresh interpreter: imports, TensorFlow, tracing, fit, acquisition,
Parquet in and out). The paper reports ~45 s for its whole 16 + 256 run, ~0.17 s per iteration.

Run: ./in-env python benchmarks/proposal_overhead.py   (last line: in_process_seconds_at_256=<x>)
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dptradeoff.baselines.random_search import sample
from dptradeoff.problems import get_problem

PROBLEM = "adult-logreg-sgd"
JOB = """
import sys, time
t0 = time.perf_counter()
import numpy as np, pandas as pd
from dptradeoff.bo import gp
from dptradeoff.bo.propose import Settings, propose
from dptradeoff.problems import get_problem
gp.backend()
t1 = time.perf_counter()
evals = pd.read_parquet(sys.argv[1])
out = propose(get_problem("%s"), evals, 1, Settings(), np.random.default_rng(0))
out.to_parquet(sys.argv[2])
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {out['fit_seconds'].iloc[0]:.3f} {out['acquisition_seconds'].iloc[0]:.3f} {t2 - t1:.3f}")
""" % PROBLEM


def synthetic_evaluations(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Points from the paper's sampling distributions with smooth, noisy objectives of realistic range."""
    problem = get_problem(PROBLEM)
    points = sample(problem, n, rng)
    z, epochs, lot = points["noise"].to_numpy(), points["epochs"].to_numpy(), points["lot_size"].to_numpy()
    points["epsilon"] = np.sqrt(epochs * lot / 32561.0) * 8.0 / z
    points["error"] = np.clip(0.15 + 0.2 / (1 + points["epsilon"]) + 0.02 * rng.standard_normal(n), 0.01, 0.99)
    return points


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (16, 64, 256):
            path = Path(tmp) / f"evals{n}.parquet"
            synthetic_evaluations(n, rng).to_parquet(path)
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", JOB, str(path), str(Path(tmp) / "out.parquet")],
                                 capture_output=True, text=True, check=True)
            job = time.perf_counter() - start
            startup, fit, acquisition, work = map(float, out.stdout.split())
            rows.append((n, startup, fit, acquisition, fit + acquisition, job))
    print(f"{'observed':>8} {'start-up+imports':>17} {'GP fits':>8} {'HVPoI max':>10} {'in-process':>11} {'whole job':>10}")
    for n, startup, fit, acq, inproc, job in rows:
        print(f"{n:8d} {startup:16.2f}s {fit:7.2f}s {acq:9.2f}s {inproc:10.2f}s {job:9.2f}s")
    n, startup, fit, acq, inproc, job = rows[-1]
    print(f"at 256 points: in-process {inproc:.2f} s = {inproc / 0.17:.1f}x the paper's ~0.17 s per iteration; "
          f"start-up is {startup / job:.0%} of the job")
    print(f"in_process_seconds_at_256={inproc:.2f}")


if __name__ == "__main__":
    main()
