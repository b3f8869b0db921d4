from dptradeoff.plots.dpareto import fig_cost
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import error_floor
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    methods = {method: {problem: read_frame(f) for problem, f in zip(p.problems, i[method.replace("-", "_")])} for method in p.methods}
    metrics = {problem: p.metrics.metrics(error_floor(resolve(problem, p.definitions[problem]), p.utility_floors[problem]))
               for problem in p.problems}
    fig_cost(methods, metrics, snakemake.output[0], p.config_label)
