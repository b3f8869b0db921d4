import numpy as np
import pandas as pd

from dptradeoff.baselines.random_search import sample
from dptradeoff.problems import get_problem
from dptradeoff.problems.tables import write_frame
from dptradeoff.seeds import rng
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = get_problem(p.problem)
    if w.design == "random":
        points = sample(problem, p.initial_points, rng(p.seed, p.problem, "illustration", "random"))
    else:
        # The fine grid of the "exact" front: log-spaced for log parameters, every integer for C.
        axes = []
        for param in problem.domain:
            if param.integer:
                axes.append(np.arange(param.low, param.high + 1))
            elif param.log:
                axes.append(np.geomspace(param.low, param.high, p.grid))
            else:
                axes.append(np.linspace(param.low, param.high, p.grid))
        mesh = np.meshgrid(*axes, indexing="ij")
        points = pd.DataFrame({n: m.ravel() for n, m in zip(problem.names, mesh)})
        for param in problem.domain:
            if param.integer:
                points[param.name] = points[param.name].astype(int)
    write_frame(points, snakemake.output[0], {"problem": p.problem, "design": w.design})
