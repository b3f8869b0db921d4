from dptradeoff.plots.illustrations import surfaces_figure
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    i = snakemake.input
    surfaces_figure(read_frame(i.random), read_frame(i.surfaces), read_frame(i.next_point), read_frame(i.grid),
                    snakemake.output[0], snakemake.params.name, snakemake.params.config_label)
