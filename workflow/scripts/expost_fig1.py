from dptradeoff.plots.expost import fig1
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    f = snakemake.params.fig1
    fig1(read_frame(snakemake.input[0]), f["eps"], f["eps_prime"], snakemake.output[0], snakemake.params.config_label)
