import pyarrow as pa

from dptradeoff.data.reddit import power_law_histogram
from dptradeoff.expost.experiments import thread_trials
from dptradeoff.io import read_provenance, write_table
from dptradeoff.problems.tables import read_frame
from dptradeoff.seeds import rng
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    cfg, row, table = snakemake.params.expost, snakemake.wildcards.row, snakemake.wildcards.table
    if row == "Reddit":
        counts = read_frame(snakemake.input[0])["authors"].to_numpy()
        source = read_provenance(snakemake.input[0]).get("source_label", "unknown")
    else:
        s = cfg["synthetic"]
        samples = int(row[1:])
        counts = power_law_histogram(samples, s["threads"], s["exponent"], rng(snakemake.params.seed, "expost", row))["authors"].to_numpy()
        source = f"synthetic: {samples} samples of the power law x^{s['exponent']} on [{s['threads']}]"
    frame = thread_trials(counts, table, cfg, cfg["trials"], (snakemake.params.seed, "expost", row))
    write_table(pa.Table.from_pandas(frame, preserve_index=False), snakemake.output[0],
                {"what": f"paper 004 {table} trials", "row": row, "source_label": source, "threads": int(len(counts))})
