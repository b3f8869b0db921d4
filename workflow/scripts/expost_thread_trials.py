from dptradeoff.expost.experiments import thread_row, thread_trials
from dptradeoff.expost.settings import ExpostSettings
from dptradeoff.io import write_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    settings, table, seed = ExpostSettings.from_config(snakemake.params.expost), snakemake.wildcards.table, snakemake.params.seed
    row = thread_row(snakemake.wildcards.row, settings, seed, snakemake.input[0] if snakemake.input else None)
    frame = thread_trials(row, settings.thread_table(table), settings, (seed, "expost", row.name))
    write_frame(frame, snakemake.output[0],
                {"what": f"paper 004 {table} trials", "row": row.name, "source_label": row.source, "threads": int(row.threads)})
