import pandas as pd

from dptradeoff.plots.dpareto import fig7, fig8
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    # DPareto and random evaluations together (the shared initial points once).
    evals = {}
    for problem, bo, random in zip(p.problems, i.bo, i.random):
        frame = pd.concat([read_frame(bo), read_frame(random)], ignore_index=True)
        evals[problem] = frame.drop_duplicates(subset=["seed"])  # the shared initial points appear in both
    if snakemake.wildcards.n == "7":
        fig7({k: v for k, v in evals.items() if k in ("adult-logreg-sgd", "mnist-mlp2-sgd")}, snakemake.output[0], p.config_label)
    else:
        fig8(evals, snakemake.output[0], p.config_label)
