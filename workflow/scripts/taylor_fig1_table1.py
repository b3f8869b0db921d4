import pandas as pd

from dptradeoff.io import read_provenance
from dptradeoff.plots.proposetest_taylor import taylor_fig1
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.taylor.experiments import PAPER_TABLE1, errors, loss_at_zero, reading
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    cfg = snakemake.params.cfg
    panels = [tuple(panel) for panel in snakemake.params.panels]
    readings = {name: reading(cfg, name) for name in dict.fromkeys(r for r, _, _ in panels)}
    frames = {panel: read_frame(path) for panel, path in zip(panels, snakemake.input)}
    provenance = [read_provenance(path) for path in snakemake.input]
    sources = list(dict.fromkeys(p["source_label"] for p in provenance))
    taylor_fig1(frames, {name: how.label for name, how in readings.items()}, cfg["fig1_measuring"], sources,
                snakemake.output.fig, snakemake.params.config_label)
    rows = []
    for ((name, dataset, loss), frame), meta in zip(frames.items(), provenance):
        how = readings[name]
        curve = frame.groupby("target")["actual"].mean()
        for derivative, err in errors(frame).groupby("derivative", sort=False):
            err = err.set_index("measuring")["error"]
            row = {"reading": name, "solver": how.solver.name, "noise": how.noise.name, "guarantee": how.guarantee,
                   "dataset": dataset, "loss": loss, "derivative": derivative, "n": meta["n"],
                   "trials": int(frame["repeat"].nunique())}
            row.update({f"error_{m:.2f}": float(err.loc[m]) for m in err.index})
            row["best_measuring"] = float(err.idxmin())
            row.update({f"paper_{m}": v for m, v in PAPER_TABLE1.get((dataset, loss), {}).items()})
            row.update({f"loss_at_{curve.index[0]:g}": float(curve.iloc[0]), f"loss_at_{curve.index[-1]:g}": float(curve.iloc[-1]),
                        "loss_at_theta_0": loss_at_zero(loss, cfg["c"]), "source": meta["source_label"]})
            rows.append(row)
    described = "; ".join(f"{name} = {how.solver.describe()}, noise {how.noise.description}: {how.guarantee}"
                          for name, how in readings.items())
    note = (f"Paper 002 Table 1: mean |estimated - actual| training loss over targets {cfg['targets']['start']}..."
            f"{cfg['targets']['stop']} and {cfg['repeats']} noise draws, per measuring point (error_*), beside the "
            f"paper's values (paper_*, the same for every reading); objective perturbation with c = {cfg['c']}, "
            f"lambda = {cfg['lambda']}. Readings: {described}. Only the exact minimiser with exp(-beta ||b||) noise is "
            f"covered by Chaudhuri et al.'s eps-DP proof. derivative eq6 = paper 002's formula (assumes the model "
            f"minimises the objective), unrolled = the exact derivative of the iterate trained (iterative solvers). "
            f"loss_at_*: mean actual training loss at the first and last target and of theta = 0. The estimates read "
            f"the private data. Config: {snakemake.params.config_label}.")
    write(pd.DataFrame(rows), snakemake.output.csv, snakemake.output.md, note)
