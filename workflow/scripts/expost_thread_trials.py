import pyarrow as pa

from dptradeoff.data.reddit import power_law_histogram
from dptradeoff.expost.experiments import thread_trials
from dptradeoff.io import read_provenance, write_table
from dptradeoff.problems.tables import read_frame
from dptradeoff.seeds import rng
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    cfg, row, table, seed = snakemake.params.expost, snakemake.wildcards.row, snakemake.wildcards.table, snakemake.params.seed
    if row == "Reddit":
        histogram = read_frame(snakemake.input[0])["authors"].to_numpy()
        source = read_provenance(snakemake.input[0]).get("source_label", "unknown")
        threads = len(histogram)

        def counts_of_trial(trial):
            return histogram
    else:
        s = cfg["synthetic"]
        samples, threads = int(row[1:]), s["threads"]
        source = f"synthetic: {samples} samples of the power law x^{s['exponent']} on [{threads}], a fresh draw per trial"

        def counts_of_trial(trial):
            return power_law_histogram(samples, threads, s["exponent"], rng(seed, "expost", row, "draw", trial))["authors"].to_numpy()
    frame = thread_trials(counts_of_trial, table, cfg, cfg["trials"], (seed, "expost", row))
    write_table(pa.Table.from_pandas(frame, preserve_index=False), snakemake.output[0],
                {"what": f"paper 004 {table} trials", "row": row, "source_label": source, "threads": int(threads)})
