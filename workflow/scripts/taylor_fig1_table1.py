import pandas as pd

from dptradeoff.io import read_provenance
from dptradeoff.plots.proposetest_taylor import taylor_fig1
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.taylor.experiments import PAPER_TABLE1, errors
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    cfg = snakemake.params.cfg
    frames = {tuple(pair): read_frame(path) for pair, path in zip(snakemake.params.pairs, snakemake.input)}
    sources = [read_provenance(path)["source_label"] for path in snakemake.input]
    taylor_fig1({k: f for k, f in frames.items()}, cfg["fig1_measuring"], sources, snakemake.output.fig,
                snakemake.params.config_label)
    rows = []
    for ((dataset, loss), frame), path, source in zip(frames.items(), snakemake.input, sources):
        for derivative, err in errors(frame).groupby("derivative", sort=False):
            err = err.set_index("measuring")["error"]
            row = {"dataset": dataset, "loss": loss, "derivative": derivative, "source": source,
                   "n": read_provenance(path)["n"], "trials": int(frame["repeat"].nunique())}
            row.update({f"error_{m:.2f}": float(err.loc[m]) for m in err.index})
            row["best_measuring"] = float(err.idxmin())
            row.update({f"paper_{m}": v for m, v in PAPER_TABLE1.get((dataset, loss), {}).items()})
            rows.append(row)
    note = (f"Paper 002 Table 1: mean |estimated - actual| training loss over targets {cfg['targets']['start']}..."
            f"{cfg['targets']['stop']} and {cfg['repeats']} repeats, per measuring point; objective perturbation "
            f"(c = {cfg['c']}, lambda = {cfg['lambda']}, solver {cfg['solver']}, {cfg['iterations']} steps of "
            f"{cfg['learning_rate']}); derivative eq6 = paper 002's formula (assumes the model minimises the objective), "
            f"unrolled = the exact derivative of the gradient-descent model; paper_* = the paper's values. Privacy: "
            f"Chaudhuri et al.'s eps-DP proof needs the exact minimiser, so with solver gd eps labels the noise level "
            f"(as in paper 002), not a guarantee for the trained models; the estimates read the private data. "
            f"Config: {snakemake.params.config_label}.")
    write(pd.DataFrame(rows), snakemake.output.csv, snakemake.output.md, note)
