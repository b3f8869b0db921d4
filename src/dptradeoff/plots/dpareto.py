"""Figs 5-8 of paper 001 and the batch-vs-sequential figure, from evaluation Parquet files."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..stats.cost import cumulative_cost, in_training_order, is_traced, spent
from ..stats.hypervolume import objectives
from .common import front_line, save

NAMES = {"adult-logreg-sgd": "LogReg+SGD", "adult-logreg-adam": "LogReg+Adam", "adult-svm-sgd": "SVM+SGD",
         "mnist-mlp1-sgd": "MLP1", "mnist-mlp2-sgd": "MLP2"}


def _sources(*frames) -> list[str]:
    return [s for f in frames for s in f["source_label"].tolist()]


def _eps_axis(ax, ylabel="classification error"):
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel(ylabel)


# Fig. 5 bottom right: DPareto's k points against this many random points (the paper: 1,500).
FIG5_RANDOM_POINTS = 1500
# Every method's line in Fig. 5: the chains solid in their own colours, the sampling baselines in grey.
METHOD_STYLES = {"dpareto": ("C0", "-", "DPareto"), "optuna-tpe": ("C2", "-", "Optuna TPE"),
                 "optuna-gp": ("C3", "-", "Optuna GP"), "botorch": ("C4", "-", "BoTorch qLogNEHVI"),
                 "moasha": ("C5", "-", "Syne Tune MOASHA"),
                 "random": ("0.35", "--", "random (Tables 3-4)"), "uniform": ("0.55", ":", "uniform random")}


def fig5(methods: dict[str, dict[str, pd.DataFrame]], comparison: pd.DataFrame | None, k0: int,
         metrics: dict[str, list], out: str, config: str) -> None:
    """One row per front metric (`metrics`: problem -> its metrics, hypervolume-like ones drawn), one column
    per problem: the metric against evaluations for every method (`methods`: method -> problem -> evaluations,
    chains and sampling baselines; a problem absent under a method does not run it); last row: MLP2 fronts of
    every method, and adult LogReg+SGD: DPareto's k points against the first FIG5_RANDOM_POINTS points of the
    large random sample."""
    problems = list(metrics)
    drawn = {p: [m for m in metrics[p] if m.higher_is_better] for p in problems}
    rows = max(len(m) for m in drawn.values())
    fig, axes = plt.subplots(rows + 1, max(len(problems), 2), figsize=(4 * max(len(problems), 2), 3.2 * (rows + 1)),
                             squeeze=False)
    for column, problem in enumerate(problems):
        for row, metric in enumerate(drawn[problem]):
            ax = axes[row, column]
            for method, frames in methods.items():
                if problem not in frames:
                    continue
                color, style, label = METHOD_STYLES.get(method, ("C9", "-", method))
                curve = per_training(frames[problem], metric)
                ax.plot(np.arange(1, len(curve) + 1), curve, color=color, ls=style, label=label)
            ax.axvline(k0, color="0.5", lw=0.8, ls=":")
            ax.set_xlabel("trainings (evaluations)")
            ax.set_ylabel(metric.name)
            ax.set_title(f"{NAMES.get(problem, problem)}: {metric.name}", fontsize=8)
        for row in range(len(drawn[problem]), rows):
            axes[row, column].set_visible(False)
    # one legend, top left, of every method drawn in any panel (a problem may run fewer methods)
    handles = {}
    for ax in axes[:rows].flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    axes[0, 0].legend(handles.values(), handles.keys(), fontsize=6)
    bottom = axes[rows]
    ax = bottom[0]
    mlp2 = "mnist-mlp2-sgd"
    if mlp2 in problems and mlp2 in methods.get("dpareto", {}):
        first = methods["dpareto"][mlp2]
        shared = first[first["index"] < k0]
        for method, frames in methods.items():
            if method == "uniform" or mlp2 not in frames:
                continue
            color, _, label = METHOD_STYLES.get(method, ("C9", "-", method))
            frame = frames[mlp2][frames[mlp2]["index"] >= k0]
            pts = objectives(frame)
            ax.scatter(pts[:, 0], pts[:, 1], s=8, color=color, alpha=0.5)
            front_line(ax, objectives(pd.concat([shared, frame])), color=color, lw=1.5, label=f"{label} front")
        init = objectives(shared)
        ax.scatter(init[:, 0], init[:, 1], s=18, marker="x", color="k", label="shared initial points")
        _eps_axis(ax)
        ax.legend(fontsize=6)
        ax.set_title("mnist MLP2: Pareto fronts", fontsize=8)
    ax = bottom[1]
    adult = "adult-logreg-sgd"
    if comparison is not None and adult in methods.get("dpareto", {}):
        larger = comparison[comparison["index"] < FIG5_RANDOM_POINTS]
        pts = objectives(larger)
        ax.scatter(pts[:, 0], pts[:, 1], s=5, color="C1", alpha=0.35, label=f"random ({len(larger)} points)")
        front_line(ax, pts, color="C1", lw=2, label="random front")
        chosen = methods["dpareto"][adult][methods["dpareto"][adult]["index"] >= k0]
        pts = objectives(chosen)
        ax.scatter(pts[:, 0], pts[:, 1], s=10, color="C0", label=f"DPareto ({len(chosen)} points)")
        front_line(ax, pts, color="C0", lw=2, label="DPareto front")
        _eps_axis(ax)
        ax.legend(fontsize=6)
        ax.set_title(f"adult LogReg+SGD: DPareto's {len(chosen)} points vs {len(larger)} random points", fontsize=8)
    for ax in bottom[2:]:
        ax.set_visible(False)
    names = ", ".join(METHOD_STYLES.get(m, (None, None, m))[2] for m in methods)
    caption = (f"Fig. 5: front quality vs evaluations ({names}), one row per metric "
               f"({', '.join(m.name for m in drawn[problems[0]])}); MLP2 fronts; adult LogReg+SGD: DPareto's points "
               f"after the {k0} initial ones vs the first {FIG5_RANDOM_POINTS} points of the large random sample.")
    save(fig, out, caption, _sources(*(f for frames in methods.values() for f in frames.values())), config)


def per_training(evals: pd.DataFrame, metric) -> np.ndarray:
    """The metric after each training, in training order (a traced training's rows all count at its end; a
    continued training's later stretches count at the training they were trained beside, not as trainings)."""
    ordered = in_training_order(evals)
    curve = metric.curve(ordered["epsilon"], ordered["error"])
    if "trace_final" not in ordered:
        return curve
    if "segment_start" not in ordered:
        return curve[ordered["trace_final"].to_numpy(bool)]
    # a training counts at the row before the next new training's first row (or the last row)
    index = ordered["index"].to_numpy(float)
    first = (ordered["segment_start"].fillna(0).to_numpy(float) == 0) & (index != np.r_[np.nan, index[:-1]])
    return curve[np.r_[first[1:], True]]


def fig_cost(methods: dict[str, dict[str, pd.DataFrame]], metrics: dict[str, list], out: str, config: str) -> None:
    """The region metric against cumulative training cost (epochs of one replication; evaluations for a
    problem without epochs), one panel per problem, every method (`methods`: method -> problem ->
    evaluations; a traced run draws a point at every trace row); the dotted line is the DPareto chain's
    total cost, where the methods are compared. A problem absent under a method does not run it."""
    problems = list(metrics)
    fig, axes = plt.subplots(1, len(problems), figsize=(4.2 * len(problems), 3.6), squeeze=False)
    traced = set()
    for ax, problem in zip(axes[0], problems):
        region = next(m for m in metrics[problem] if m.name == "region")
        for method, frames in methods.items():
            if problem not in frames:
                continue
            color, style, label = METHOD_STYLES.get(method, ("C9", "-", method))
            ordered = in_training_order(frames[problem])
            if is_traced(ordered):
                traced.add(label)
            ax.step(cumulative_cost(ordered), region.curve(ordered["epsilon"], ordered["error"]), where="post",
                    color=color, ls=style, label=label + (" (traces)" if is_traced(ordered) else ""))
        if problem in methods.get("dpareto", {}):
            ax.axvline(spent(methods["dpareto"][problem]), color="0.5", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_xlabel("training cost (epochs of one replication)")
        ax.set_ylabel("region")
        ax.set_title(NAMES.get(problem, problem), fontsize=8)
        ax.legend(fontsize=6)
    caption = ("Front quality (region metric) against training cost: every method, each training's trace rows counted "
               "as the epochs they took" + (f"; with epoch traces: {', '.join(sorted(traced))}" if traced else
                                            "; no method recorded epoch traces (dpareto.traces: false)") + ".")
    save(fig, out, caption, _sources(*(f for frames in methods.values() for f in frames.values())), config)


def fig6(bo: dict[str, pd.DataFrame], grids: dict[str, dict[int, pd.DataFrame]], out: str, config: str) -> None:
    """Grid search vs DPareto: one row per problem with grids (the paper: adult LogReg+SGD), one panel per grid."""
    width = max(len(g) for g in grids.values())
    fig, axes = plt.subplots(len(grids), width, figsize=(5.5 * width, 4.5 * len(grids)), squeeze=False)
    for row, (problem, problem_grids) in zip(axes, grids.items()):
        for ax, (k, grid) in zip(row, sorted(problem_grids.items())):
            pts = objectives(grid)
            ax.scatter(pts[:, 0], pts[:, 1], s=6, color="C2", alpha=0.4, label=f"grid, {k} per dimension ({len(grid)} points)")
            front_line(ax, pts, color="C2", lw=2, label="grid front")
            pts = objectives(bo[problem])
            ax.scatter(pts[:, 0], pts[:, 1], s=10, color="C0", label=f"DPareto ({len(bo[problem])} points)")
            front_line(ax, pts, color="C0", lw=2, label="DPareto front")
            _eps_axis(ax)
            ax.set_title(NAMES.get(problem, problem))
            ax.legend(fontsize=7)
        for ax in row[len(problem_grids):]:
            ax.set_visible(False)
    caption = f"Fig. 6: grid search vs DPareto on {', '.join(NAMES.get(p, p) for p in grids)}."
    save(fig, out, caption, _sources(*bo.values(), *(g for pg in grids.values() for g in pg.values())), config)


def fig7(bo: dict[str, pd.DataFrame], out: str, config: str) -> None:
    """Fronts DPareto recovered from the best, mean and worst replication utilities, one panel per problem."""
    fig, axes = plt.subplots(1, len(bo), figsize=(5.5 * len(bo), 4.5), squeeze=False)
    for ax, (problem, frame) in zip(axes[0], bo.items()):
        for column, color, label in (("utility_max", "C2", "best replication"), ("utility", "C0", "mean"),
                                     ("utility_min", "C3", "worst replication")):
            front_line(ax, objectives(frame, column), color=color, lw=2, label=label)
        _eps_axis(ax)
        ax.set_title(f"{NAMES.get(problem, problem)} (R = {int(frame['repeats'].iloc[0])})")
        ax.legend(fontsize=7)
    caption = "Fig. 7: Pareto fronts DPareto recovered from the best, mean and worst of the R replication utilities."
    save(fig, out, caption, _sources(*bo.values()), config)


def fig8(bo: dict[str, pd.DataFrame], out: str, config: str) -> None:
    """Fronts DPareto recovered across model/optimizer (adult) and across architectures (mnist)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, dataset in zip(axes, ("adult", "mnist")):
        for i, (problem, frame) in enumerate((p, f) for p, f in bo.items() if p.startswith(dataset)):
            front_line(ax, objectives(frame), color=f"C{i}", lw=2, label=NAMES.get(problem, problem))
        _eps_axis(ax)
        ax.set_title(f"{dataset}: Pareto fronts")
        ax.legend(fontsize=7)
    caption = "Fig. 8: Pareto fronts DPareto recovered across models and optimizers (adult) and architectures (mnist)."
    save(fig, out, caption, _sources(*bo.values()), config)


def batch_figure(table: pd.DataFrame, out: str, sources: list[str], config: str) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for q, rows in table.groupby("batch_size"):
        axes[0].plot(rows["evaluations"], rows["hypervolume"], marker="o", ms=3, label=f"q = {q}")
        axes[1].plot(rows["wall_seconds"], rows["hypervolume"], marker="o", ms=3, label=f"q = {q}")
    axes[0].set_xlabel("evaluations")
    axes[1].set_xlabel("wall-clock seconds with q parallel workers (measured job times)")
    for ax in axes:
        ax.set_ylabel("hypervolume")
        ax.legend()
    caption = "Batch vs sequential DPareto: hypervolume at equal evaluation counts and against wall-clock time."
    save(fig, out, caption, sources, config)
