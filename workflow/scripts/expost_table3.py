from dptradeoff.expost.ml_experiments import ml_table_report
from dptradeoff.expost.settings import ExpostSettings
from dptradeoff.io import read_frame, read_provenance
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    frames = {d: read_frame(path) for d, path in zip(p.datasets, snakemake.input)}
    provenance = [read_provenance(path) for path in snakemake.input]
    frame, note = ml_table_report(frames, provenance, ExpostSettings.from_config(p.expost), p.config_label)
    write(frame, snakemake.output.csv, snakemake.output.md, note)
