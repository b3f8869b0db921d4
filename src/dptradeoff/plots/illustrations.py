"""Figs 1-4 of paper 000: the two illustrative examples (output-perturbation logistic regression, SVT)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm

from ..pareto import pareto_mask
from ..problems import get_problem
from .common import error_label, front_line, save

LABELS = {"gamma": "regularisation γ", "sigma": "noise σ", "bound": "answer bound C", "b": "noise b"}
ERROR_NAMES = {"accuracy": "classification error", "F1": "1 − F1"}


def _plane(ax, frame: pd.DataFrame, x: str, y: str, value: np.ndarray, title: str, log_color: bool, cmap: str):
    grid = pd.DataFrame({x: frame[x], y: frame[y], "v": value}).pivot_table(index=y, columns=x, values="v")
    values = grid.values
    positive = values[values > 0]
    # log colours span at most 8 decades below the maximum (HVPoI is 0 over most of the plane)
    floor = max(positive.min() if positive.size else 1e-12, np.nanmax(values) * 1e-8)
    norm = LogNorm(vmin=floor, vmax=np.nanmax(values)) if log_color else None
    if log_color:
        grid = grid.clip(lower=floor)
    mesh = ax.pcolormesh(grid.columns.to_numpy(), grid.index.to_numpy(), grid.values, shading="nearest", cmap=cmap,
                         norm=norm, linewidth=0, antialiased=False, rasterized=True)
    plt.colorbar(mesh, ax=ax)
    ax.grid(False)
    _hyperparameter_axes(ax, frame["problem"].iloc[0], x, y)
    ax.set_title(title)


def _hyperparameter_axes(ax, problem_name: str, x: str, y: str) -> None:
    """Label the two hyperparameter axes, log-scaled where the parameter is searched on a log scale."""
    problem = get_problem(problem_name)
    for name, setter in ((x, ax.set_xscale), (y, ax.set_yscale)):
        if next(p for p in problem.domain if p.name == name).log:
            setter("log")
    ax.set_xlabel(LABELS.get(x, x))
    ax.set_ylabel(LABELS.get(y, y))


def oracles_figure(grid: pd.DataFrame, out: str, name: str, config: str) -> None:
    """Fig 1 / 2: privacy and utility over the hyperparameter plane, the exact front and its inputs."""
    x, y = get_problem(grid["problem"].iloc[0]).names
    utility = "F1" if grid["problem"].iloc[0] == "svt" else "accuracy"
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    _plane(axes[0, 0], grid, x, y, grid["epsilon"].to_numpy(), "privacy oracle: ε", True, "viridis")
    _plane(axes[0, 1], grid, x, y, grid["utility"].to_numpy(), f"utility oracle: {utility}", False, "magma")
    pts = np.column_stack([grid["epsilon"], grid["error"]])
    on_front = pareto_mask(pts)
    ax = axes[1, 0]
    ax.scatter(pts[:, 0], pts[:, 1], s=4, color="0.7", label="grid points")
    front_line(ax, pts, color="C3", lw=2, label="exact Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel(error_label(utility))
    ax.set_title("Pareto front")
    ax.legend()
    ax = axes[1, 1]
    ax.scatter(grid[x], grid[y], s=4, color="0.8")
    sc = ax.scatter(grid[x][on_front], grid[y][on_front], c=np.log10(pts[on_front, 0]), cmap="viridis", s=18)
    plt.colorbar(sc, ax=ax, label="log10 ε on the front")
    _hyperparameter_axes(ax, grid["problem"].iloc[0], x, y)
    ax.set_title("hyperparameters of the front")
    caption = (f"{name}: privacy and utility oracles over a {len(grid)}-point grid, the exact Pareto front and "
               f"its inputs (R = {len(grid['utility_runs'].iloc[0])} replications per point).")
    save(fig, out, caption, grid["source_label"].tolist(), config)


def surfaces_figure(random: pd.DataFrame, surfaces: pd.DataFrame, next_point: pd.DataFrame, grid: pd.DataFrame,
                    out: str, name: str, config: str) -> None:
    """Fig 3 / 4: GP means of both oracles with the sampled points, empirical vs exact front,
    HVPoI surface with the next point."""
    problem = get_problem(random["problem"].iloc[0])
    x, y = problem.names
    error = ERROR_NAMES[problem.utility]
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    _plane(axes[0, 0], surfaces.assign(problem=problem.name), x, y, surfaces["predicted_epsilon"].to_numpy(),
           "GP mean of ε", True, "viridis")
    # The paper's top right: the error the utility GP models (classification error, 1 - F1).
    _plane(axes[0, 1], surfaces.assign(problem=problem.name), x, y, surfaces["predicted_error"].to_numpy(),
           f"GP mean of {error}", False, "magma_r")
    for ax in axes[0]:
        ax.scatter(random[x], random[y], s=5, color="white", edgecolor="k", linewidth=0.2)
    ax = axes[1, 0]
    sampled = np.column_stack([random["epsilon"], random["error"]])
    exact = np.column_stack([grid["epsilon"], grid["error"]])
    ax.scatter(sampled[:, 0], sampled[:, 1], s=6, color="0.6", label=f"{len(random)} random points")
    front_line(ax, sampled, color="C0", lw=2, label="empirical front")
    front_line(ax, exact, color="C3", lw=1.5, ls="--", label="exact front (grid)")
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel(error)
    ax.legend()
    ax.set_title("empirical vs exact Pareto front")
    _plane(axes[1, 1], surfaces.assign(problem=problem.name), x, y, surfaces["hvpoi"].to_numpy(), "HVPoI (log colour)", True, "cividis")
    axes[1, 1].scatter(next_point[x], next_point[y], marker="*", s=250, color="red", edgecolor="k", label="next point")
    axes[1, 1].legend(loc="upper right")
    # ASCII only: a non-ASCII caption makes the PDF metadata UTF-16, which plain-text search of the file misses
    caption = (f"{name}: GP means of epsilon and {error.replace('−', '-')} after {len(random)} random points, empirical vs "
               "exact front, and the HVPoI surface with its maximiser (the next point) under the same GP fit.")
    save(fig, out, caption, random["source_label"].tolist(), config)
