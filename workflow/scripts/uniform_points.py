from dptradeoff.baselines.random_search import sample_uniform
from dptradeoff.problems import get_problem
from dptradeoff.problems.tables import write_frame
from dptradeoff.seeds import rng
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w = snakemake.wildcards
    problem = get_problem(w.problem, snakemake.params.ranges)
    points = sample_uniform(problem, snakemake.params.points, rng(snakemake.params.seed, w.problem, "uniform", w.run, "sample"))
    write_frame(points, snakemake.output[0], {"problem": w.problem, "method": "uniform", "run": int(w.run),
                                              "ranges": snakemake.params.ranges, "seed": snakemake.params.seed})
