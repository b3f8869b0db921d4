from dptradeoff.plots.dpareto import fig5
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    bo = {problem: read_frame(f) for problem, f in zip(p.problems, i.bo)}
    sampling = {method: {problem: read_frame(f) for problem, f in zip(p.problems, i[method])} for method in p.sampling}
    comparison = read_frame(i.comparison[0]) if i.comparison else None
    fig5(bo, sampling, comparison, p.initial_points, snakemake.output[0], p.config_label)
