"""Two chains' first rounds as threads of one fresh process (as Snakemake runs bo_propose with
force-use-threads), the second starting `delay` seconds after the first: used by test_bo.py."""
import sys, threading, time
import numpy as np
from dptradeoff.baselines.random_search import sample
from dptradeoff.bo.chain_round import propose_round
from dptradeoff.bo.propose import DPareto, Settings
from dptradeoff.problems import get_problem
from dptradeoff.problems.tables import write_frame

work, delay = sys.argv[1], float(sys.argv[2])
problem = get_problem("svt")
rng = np.random.default_rng(0)
for name in ("a", "b"):
    frame = sample(problem, 8, rng)
    frame["epsilon"], frame["error"] = rng.uniform(0.1, 5, 8), rng.uniform(0.1, 0.9, 8)
    write_frame(frame, f"{work}/{name}_initial.parquet", {"problem": "svt"})
def run(name):
    propose_round(method=DPareto(Settings(candidates=100, gp_restarts=1)), problem="svt", definition=None, initial=f"{work}/{name}_initial.parquet", evaluations=[], previous=None,
                  output=f"{work}/{name}_0.parquet", log=f"{work}/{name}.log", batch_size=1, seed=1, run=0, round_index=0)
threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in ("a", "b")]
threads[0].start(); time.sleep(delay); threads[1].start()
for t in threads:
    t.join(timeout=120)
print("deadlocked" if any(t.is_alive() for t in threads) else "finished", flush=True)
import os; os._exit(1 if any(t.is_alive() for t in threads) else 0)
