"""What the GP-based peers' proposals cost on epoch-trace rows, with every row and with the rows
DPareto's GPs learn from (`bo.propose.gp_rows`, at most `dpareto.peer_gp_points`).

The evaluations are those of a default-config chain at its end on adult LogReg+SGD: 16 + 12 traced
trainings (random points of Tables 3-4, R = 3, epochs in [1, 16], every epoch a row). For each GP
peer (Optuna GP, BoTorch qLogNEHVI), one proposal round is timed (process CPU seconds, one BLAS
thread) over --rounds round seeds, with every row and with the capped rows.
Needs the default config's adult data in --work:
  ./in-env snakemake --cores 1 --directory DIR results/data/adult/train.parquet
Run:  ./in-env python benchmarks/peer_rows.py --work DIR [--rounds 3] [--caps 256 64]
Last line: peer_round_cpu_capped_over_every_row: <peer>=<ratio> ... (the previous implementation gave
the peers every row).
"""
from __future__ import annotations

import argparse
import os
import time

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from dptradeoff.baselines.random_search import sample  # noqa: E402
from dptradeoff.bo.propose import gp_rows  # noqa: E402
from dptradeoff.peers import PEERS  # noqa: E402
from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data  # noqa: E402
from dptradeoff.problems.traces import TraceSettings  # noqa: E402

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config", "config.yaml")
GP_PEERS = ["optuna-gp", "botorch"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, help="a folder holding results/data/adult (the default config's)")
    parser.add_argument("--rounds", type=int, default=3, help="proposal rounds timed per peer and row set")
    parser.add_argument("--caps", type=int, nargs="+", default=[256, 64], help="row caps besides every row")
    args = parser.parse_args()
    os.chdir(args.work)
    config = yaml.safe_load(open(CONFIG))
    name = "adult-logreg-sgd"
    problem = get_problem(name, config["problems"][name].get("ranges"))
    data = load_data(problem)
    traces = TraceSettings.from_config({**config["dpareto"], "traces": True})
    points = sample(problem, 16 + 12, np.random.default_rng(1))
    evals = evaluate(problem, points, data, config["problems"][name]["repeats"], 1, "random", 0, 0, traces)
    print(f"{name}: {int(evals['trace_final'].sum())} trainings, {len(evals)} rows")
    ratios = {}
    for peer_name in GP_PEERS:
        peer = PEERS[peer_name]
        seconds = {}
        for cap in [None, *args.caps]:
            rows = evals if cap is None else gp_rows(evals, cap)
            spent = []
            for r in range(args.rounds):
                start = time.process_time()
                peer.round(problem, rows, 1, seed=11, run=0, round_index=r, initial=16, previous=None)
                spent.append(time.process_time() - start)
            seconds[cap] = float(np.median(spent))
            print(f"{peer_name}: {len(rows):4d} rows ({'every row' if cap is None else f'cap {cap}'}): "
                  f"median {seconds[cap]:.2f} CPU s per round over {args.rounds}")
        ratios[peer_name] = seconds[args.caps[-1]] / seconds[None]
    print("peer_round_cpu_capped_over_every_row: " + " ".join(f"{k}={v:.2f}" for k, v in ratios.items())
          + f" (cap {args.caps[-1]})")


if __name__ == "__main__":
    main()
