from dptradeoff.expost.settings import Fig1Settings
from dptradeoff.io import read_frame
from dptradeoff.plots.expost import fig1
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    settings = Fig1Settings(**snakemake.params.fig1)
    fig1(read_frame(snakemake.input[0]), settings.eps, settings.eps_prime, snakemake.output[0], snakemake.params.config_label)
