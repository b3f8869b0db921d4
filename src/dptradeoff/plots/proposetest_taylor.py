"""Figures of paper 003 (propose-test paths, iterations vs utility gap) and paper 002 (Taylor fits)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..proposetest.algorithm import zigzag_path
from ..taylor.experiments import fitted_lines
from .common import save


def proposetest_fig1(paths: pd.DataFrame, u0: float, granularity: float, path: str, config: str) -> None:
    fig, ax = plt.subplots(figsize=(5, 3.8))
    cmap = plt.get_cmap("viridis")
    seeds = paths["seed"].unique()
    for i, (seed, g) in enumerate(paths.groupby("seed")):
        ax.plot(g["step"], g["u"], color=cmap(i / max(1, len(seeds) - 1)), alpha=0.15, lw=0.6)
    longest = int(paths["iteration"].max())
    us, steps = zigzag_path(u0, granularity, longest)
    ax.plot([1] + steps, [u0] + us, color="red", lw=2, label=f"worst case (zig-zag), {longest} iterations")
    ax.set_xscale("symlog", base=2, linthresh=1)
    ax.set_xlabel("step")
    ax.set_ylabel("u")
    ax.legend(frameon=False, fontsize=7, loc="lower right")
    caption = (f"Paper 003 Fig. 1. (step, u) after every iteration for {len(seeds)} seeds; "
               f"red: the worst-case zig-zag within the same number of iterations.")
    save(fig, path, caption, ["simulated utilities u_s ~ U(0, 1)"], config)


def proposetest_fig2(gaps: pd.DataFrame, path: str, config: str) -> None:
    fig, ax = plt.subplots(figsize=(5, 3.6))
    agg = gaps.groupby("granularity").agg(gap=("gap", "mean"), mean=("iterations", "mean"), lo=("iterations", "min"),
                                          hi=("iterations", "max"), zigzag=("zigzag_u_star", "mean"),
                                          worst=("worst_case", "mean")).sort_values("gap")
    ax.fill_between(agg["gap"], agg["lo"], agg["hi"], alpha=0.25, label="empirical range")
    ax.plot(agg["gap"], agg["mean"], "o-", label="empirical mean")
    ax.plot(agg["gap"], agg["zigzag"], "r--", label="zig-zag count 2 ceil((u*-u0)/g) + 1 (paper)")
    ax.plot(agg["gap"], agg["worst"], "k:", label="guaranteed bound 2 ceil((1-u0)/g) + 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("(u* - u0) / g")
    ax.set_ylabel("iterations")
    ax.legend(frameon=False, fontsize=7)
    caption = "Paper 003 Fig. 2. Iterations vs (u* - u0)/g: empirical (nearly logarithmic) and the worst case."
    save(fig, path, caption, ["simulated utilities u_s ~ U(0, 1)"], config)


def taylor_fig1(frames: dict[tuple[str, str, str], pd.DataFrame], labels: dict[str, str], measuring: list[float],
                sources: list[str], path: str, config: str) -> None:
    """One row of panels per (reading, loss), one column per dataset; `frames` keyed by (reading, dataset,
    loss), `labels` the readings' labels (solver, noise, guarantee)."""
    rows = list(dict.fromkeys((r, l) for r, _, l in frames))
    datasets = list(dict.fromkeys(d for _, d, _ in frames))
    fig, axes = plt.subplots(len(rows), len(datasets), figsize=(3.4 * len(datasets), 2.9 * len(rows)), squeeze=False)
    for (reading, dataset, loss), frame in frames.items():
        ax = axes[rows.index((reading, loss))][datasets.index(dataset)]
        curve, lines = fitted_lines(frame)
        ax.plot(curve.index, curve.values, color="tab:orange", lw=2, label="actual")
        grid = np.array([curve.index.min(), curve.index.max()])
        for k, m in enumerate(measuring):
            color = f"C{k + (k >= 1)}"        # C1 is the curve's orange
            for derivative, style in (("eq6", "--"), ("unrolled", ":")):
                line = lines[np.isclose(lines["measuring"], m) & (lines["derivative"] == derivative)]
                if len(line):
                    at, slope = float(line["at_measuring"].iloc[0]), float(line["slope"].iloc[0])
                    ax.plot(grid, at + slope * (grid - m), style, color=color, lw=1, label=f"{derivative} from eps = {m:g}")
            ax.plot([m], [float(curve.loc[m])], "o", color=color, ms=3)   # where the lines touch the curve
        # eq. 6's lines can leave the loss's range by orders of magnitude: keep the actual curve readable
        span = max(float(curve.max() - curve.min()), 0.02)
        ax.set_ylim(float(curve.min()) - span, float(curve.max()) + span)
        ax.set_title(f"{labels[reading]}\n{dataset}, {loss}", fontsize=6.5)
        ax.set_xlabel("target eps")
        ax.set_ylabel("empirical training loss")
    for row in axes:
        row[0].legend(frameon=False, fontsize=5)
    caption = ("Paper 002 Fig. 1. Training loss of objective perturbation vs eps (orange, mean over noise draws) and\n"
               "first-order fits from the measuring points (dots); dashed: eq. 6's derivative, dotted: the derivative of the\n"
               "iterate trained. One row per reading and loss; only the exact minimiser with exp(-beta ||b||) noise is eps-DP.")
    save(fig, path, caption, sources, config)


def taylor_fig2(frames: dict[tuple[str, str, int], pd.DataFrame], label: str, sources: list[str], path: str,
                config: str) -> None:
    panels = list(dict.fromkeys((d, l) for d, l, _ in frames))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 2.8), squeeze=False)
    for (dataset, loss, n), frame in frames.items():
        ax = axes[0][panels.index((dataset, loss))]
        for derivative, style in (("eq6", "-"), ("unrolled", ":")):
            sel = frame[frame["derivative"] == derivative]
            if len(sel):
                err = sel.assign(error=(sel["estimate"] - sel["actual"]).abs()).groupby("target")["error"].mean()
                ax.plot(err.index, err.values, style, color=f"C{sorted(frames).index((dataset, loss, n)) % 10}",
                        label=f"n = {n} ({derivative})")
        ax.set_title(f"{dataset}, {loss} (eps = {frame['measuring'].iloc[0]:g})", fontsize=8)
        ax.set_xlabel("target eps")
        ax.set_ylabel("|estimate - actual|")
        ax.set_yscale("log")
    axes[0][0].legend(frameon=False, fontsize=6)
    caption = (f"Paper 002 Fig. 2. Estimation error vs target eps for training sets of n rows (measuring point: Table 1's "
               f"best for eq. 6). Reading {label}.")
    save(fig, path, caption, sources, config)
