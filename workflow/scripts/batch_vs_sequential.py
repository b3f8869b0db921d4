import pandas as pd

from dptradeoff.plots.dpareto import batch_figure
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.overhead import batch_rows, equal_count_table
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    per_q = []
    for q, files in ((p.sequential_q, snakemake.input.sequential), (p.batch_q, snakemake.input.batch)):
        initial, evaluations, *proposals = files
        evals = read_frame(evaluations)
        props = pd.concat([read_frame(f) for f in proposals], ignore_index=True)
        per_q.append(batch_rows(q, read_frame(initial), props, evals[evals["method"] == "dpareto"]))
    rows = pd.concat(per_q, ignore_index=True)
    sources = sorted(set(read_frame(snakemake.input.sequential[1])["source_label"]))
    note = (f"DPareto with q = {p.sequential_q} vs q = {p.batch_q} proposals per round (Kriging believer): hypervolume "
            "after each round, at the evaluation counts both reach; wall seconds = sum over rounds of the proposal job "
            "plus the slowest evaluation job of the round (q parallel workers), from measured job times. "
            f"Data: {'; '.join(sources)}. Config: {p.config_label}.")
    write(equal_count_table(rows), snakemake.output.csv, snakemake.output.md, note)
    batch_figure(rows, snakemake.output.figure, sources, p.config_label)
