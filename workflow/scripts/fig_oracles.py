from dptradeoff.plots.illustrations import oracles_figure
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    oracles_figure(read_frame(snakemake.input[0]), snakemake.output[0], snakemake.params.name, snakemake.params.config_label)
