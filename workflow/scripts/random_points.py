from dptradeoff.baselines.random_search import sample
from dptradeoff.problems import resolve
from dptradeoff.problems.tables import write_frame
from dptradeoff.seeds import rng
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w = snakemake.wildcards
    problem = resolve(w.problem, snakemake.params.problem)
    points = sample(problem, snakemake.params.points, rng(snakemake.params.seed, w.problem, w.method, w.run, "sample"))
    write_frame(points, snakemake.output[0], {"problem": w.problem, "method": w.method, "run": int(w.run),
                                              "definition": snakemake.params.problem, "seed": snakemake.params.seed})
