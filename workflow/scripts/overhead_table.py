import pandas as pd

from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.overhead import overhead_row
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    proposals, study_files = iter(i.proposals), iter(i.study)
    rows = []
    for problem, evals_path, count in zip(p.problems, i.evaluations, p.study_files):
        props = pd.concat([read_frame(next(proposals)) for _ in range(p.rounds)], ignore_index=True)
        # The shared initial points are in the random run and in the chain: count them once.
        study = pd.concat([read_frame(next(study_files)) for _ in range(count)], ignore_index=True)
        study = study.drop_duplicates(subset=["method", "run", "index"])
        rows.append(overhead_row(problem, props, read_frame(evals_path), study))
    note = ("DPareto's overhead as paper 001 reports it: total seconds of BO (GP fits + HVPoI maximisation, every round "
            "of the k0 + k chain; the paper: about 45 s), the whole proposal jobs' seconds, training seconds of the chain "
            "and of every evaluation of the problem's study (random, uniform, comparison, grids, chain), and BO's share "
            "of each (paper: under 0.1 % for adult). Then means per BO iteration: GP fits, HVPoI maximisation, the "
            "proposal job, training, its job, BO's share of an iteration's job time. Measured on the machine that ran "
            f"the pipeline. Config: {p.config_label}.")
    write(pd.DataFrame(rows), snakemake.output.csv, snakemake.output.md, note)
