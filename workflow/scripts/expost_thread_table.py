from dptradeoff.expost.experiments import thread_table_report
from dptradeoff.expost.settings import ExpostSettings
from dptradeoff.io import read_frame, read_provenance
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    settings = ExpostSettings.from_config(p.expost)
    frames = {row: read_frame(path) for row, path in zip(p.rows, snakemake.input)}
    sources = {row: read_provenance(path)["source_label"] for row, path in zip(p.rows, snakemake.input)}
    frame, note = thread_table_report(frames, sources, settings.thread_table(snakemake.wildcards.table), settings,
                                      p.config_label)
    write(frame, snakemake.output.csv, snakemake.output.md, note)
