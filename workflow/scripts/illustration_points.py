from dptradeoff.baselines.grid import grid
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
        points = grid(problem, p.grid, every_integer=True)
    write_frame(points, snakemake.output[0], {"problem": p.problem, "design": w.design})
