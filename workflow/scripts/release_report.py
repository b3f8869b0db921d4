import json

from dptradeoff.plots.release import release_figure, release_table
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake, timestamps=False):
    with open(snakemake.input[0]) as f:
        record = json.load(f)
    release_figure(record, snakemake.output.figure, snakemake.params.config_label)
    table, note = release_table(record, snakemake.params.config_label)
    write(table, snakemake.output.csv, snakemake.output.md, note)
