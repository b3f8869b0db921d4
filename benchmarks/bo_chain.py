"""A real DPareto chain of 16 initial points + 256 proposals, run by Snakemake on a cheap oracle
(adult-logreg-sgd with 1 replication and 1-2 epochs), and the total time spent in its proposal
jobs: the sum over the 256 `bo_propose` jobs of their wall time as Snakemake runs them
(`job_seconds` in each proposal file: from the job's start, TensorFlow's import and the GP graph's
tracing in the first round included, to its output being written). The paper reports ~45 s for
its whole 16 + 256 run. Takes ~15 minutes (the 256 evaluation jobs are fresh interpreters).

Run: ./in-env python benchmarks/bo_chain.py   (last lines: ratio_to_paper=<x>, chain_proposal_seconds_total=<x>)
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[1]
PAPER_SECONDS = 45.0
PROBLEM, ITERATIONS = "adult-logreg-sgd", 256
TARGET = f"results/dpareto/{PROBLEM}/dpareto/0/evaluations.parquet"


def main() -> None:
    defaults = yaml.safe_load((REPO / "config/config.yaml").read_text())["dpareto"]
    config = {
        "dpareto": {**defaults, "problems": [PROBLEM], "runs": 1, "initial_points": 16, "iterations": ITERATIONS,
                    "batch_size": 1},
        "problems": {PROBLEM: {"repeats": 1, "ranges": {"epochs": [1, 2]}}},
        "random_sampling": {"points": 16, "points_per_job": 16},
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "config").symlink_to(REPO / "config")
        (work / "chain.yaml").write_text(yaml.safe_dump(config))
        cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work), TARGET,
               "--cores", "2", "--configfile", str(work / "chain.yaml"), "--quiet", "rules"]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
        wall = time.perf_counter() - start
        if done.returncode:
            sys.exit(f"the chain failed:\n{(done.stdout + done.stderr)[-3000:]}")
        proposals = pd.concat([pq.read_table(p).to_pandas() for p in (work / f"results/dpareto/{PROBLEM}/dpareto/0/proposals").glob("*.parquet")])
        evaluations = pq.read_table(work / TARGET).to_pandas()
    proposals = proposals.sort_values("round")
    total = float(proposals["job_seconds"].sum())
    rest = proposals["job_seconds"].iloc[1:]
    print(f"chain: {len(evaluations)} evaluations (16 initial + {len(proposals)} proposed), dpareto settings {config['dpareto']}")
    print(f"whole Snakemake run: {wall:.0f} s (evaluation jobs are fresh interpreters)")
    print(f"first proposal job (imports TensorFlow/GPflow, traces the GP graph): {proposals['job_seconds'].iloc[0]:.2f} s")
    print(f"other proposal jobs: median {rest.median():.3f} s, max {rest.max():.2f} s; "
          f"GP fits {proposals['fit_seconds'].sum():.1f} s, acquisition {proposals['acquisition_seconds'].sum():.1f} s in all")
    print(f"ratio_to_paper={total / PAPER_SECONDS:.2f}")
    print(f"chain_proposal_seconds_total={total:.1f}")


if __name__ == "__main__":
    main()
