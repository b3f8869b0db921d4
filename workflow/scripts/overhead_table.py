import pandas as pd

from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.overhead import overhead_row
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    proposals = iter(snakemake.input.proposals)
    rows = []
    for problem, evals_path in zip(p.problems, snakemake.input.evaluations):
        props = pd.concat([read_frame(next(proposals)) for _ in range(p.rounds)], ignore_index=True)
        evals = read_frame(evals_path)
        rows.append(overhead_row(problem, props, evals[evals["method"] == "dpareto"]))
    note = ("Seconds per DPareto iteration (means): GP fits, HVPoI maximisation, the whole proposal job (interpreter, "
            "TensorFlow import, tracing, fits, acquisition, Parquet); training = the oracle evaluation; its whole job; "
            f"BO's share of an iteration's job time. Measured on the machine that ran the pipeline. Config: {p.config_label}.")
    write(pd.DataFrame(rows), snakemake.output.csv, snakemake.output.md, note)
