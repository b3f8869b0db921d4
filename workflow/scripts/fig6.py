from dptradeoff.plots.dpareto import fig6
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    grid_files = iter(i.grids)
    grids = {problem: {k: read_frame(next(grid_files)) for k in ks} for problem, ks in p.grids.items()}
    bo = {problem: read_frame(path) for problem, path in zip(p.grids, i.dpareto)}
    fig6(bo, grids, snakemake.output[0], p.config_label)
