from dptradeoff.plots.dpareto import fig7, fig8
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    # The fronts DPareto recovered: its chain's evaluations (the initial points included).
    bo = {problem: read_frame(path) for problem, path in zip(p.problems, i.dpareto)}
    (fig7 if snakemake.wildcards.n == "7" else fig8)(bo, snakemake.output[0], p.config_label)
