from dptradeoff.plots.dpareto import fig6
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    grids = {k: read_frame(f) for k, f in zip(snakemake.params.grids, snakemake.input.grids)}
    fig6(read_frame(snakemake.input.bo), grids, snakemake.output[0], snakemake.params.config_label)
