"""One problem's front: every evaluated point by method, the front of them all, and the answers
of front queries (the GP's prediction beside the realised training)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..problems.tables import succeeded
from ..stats.hypervolume import objectives
from .common import front_line, save

METHOD_STYLES = {"random": ("0.6", "random sampling"), "uniform": ("0.8", "uniform random"), "bo": ("C0", "DPareto"),
                 "optuna-tpe": ("C2", "Optuna TPE"), "optuna-gp": ("C3", "Optuna GP"), "botorch": ("C4", "BoTorch qLogNEHVI")}


def _trainings(count: int) -> str:
    return f"{count} training{'s' if count != 1 else ''}"


def front_figure(problem: str, utility: str, evaluations: dict[str, pd.DataFrame], queries: list[pd.DataFrame],
                 out: str, config: str) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    for method, frame in evaluations.items():
        color, label = METHOD_STYLES.get(method, ("C7", method))
        ok = succeeded(frame)
        failed = len(frame) - len(ok)
        ax.scatter(ok["epsilon"], ok["error"], s=9, color=color, alpha=0.7,
                   label=f"{label} ({len(ok)} points{f', {failed} failed' if failed else ''})")
    everything = pd.concat([succeeded(f) for f in evaluations.values()], ignore_index=True)
    front_line(ax, objectives(everything), color="k", lw=1.5, label="front of every evaluated point")
    for i, answer in enumerate(queries):
        row = answer.iloc[0]
        color = f"C{(i % 8) + 1}"
        predicted_error = 1.0 - row["predicted_utility"]
        ax.errorbar([row["epsilon"]], [predicted_error], yerr=[[row["predicted_sd"]], [row["predicted_sd"]]], fmt="o",
                    mfc="white", color=color, capsize=3, label=f"{row['question']}: GP prediction ± sd")
        ax.errorbar([row["epsilon"]], [row["error"]],
                    yerr=[[row["utility_max"] - row["utility"]], [row["utility"] - row["utility_min"]]], fmt="s",
                    color=color, capsize=3, label=f"{row['question']}: realised ({_trainings(int(row['repeats']))}, min-max)")
        if row["question"].startswith("epsilon"):
            ax.axvline(float(row["target"]), color=color, ls=":", lw=1)
        else:
            ax.axhline(1.0 - float(row["target"]), color=color, ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("ε (exact, from the privacy oracle)")
    ax.set_ylabel(f"1 − {utility}")
    ax.legend(fontsize=6, loc="best", framealpha=0.8)
    caption = (f"The privacy-utility front of {problem}: evaluated points, their front, and the answers to front "
               f"queries (open: the GP's predicted utility, not a guarantee; filled: measured).")
    sources = [s for f in evaluations.values() for s in f["source_label"].tolist()]
    save(fig, out, caption, sources, config)
    plt.close(fig)


def front_table(problem, evaluations: dict[str, pd.DataFrame], queries: list[pd.DataFrame]) -> pd.DataFrame:
    """The front of every evaluated point (hyperparameters, epsilon, utility, which method found it),
    then one row per query answer (suggestion, exact epsilon, predicted and realised utility)."""
    from ..bo.query import front

    everything = pd.concat([f.assign(method=m) for m, f in evaluations.items()], ignore_index=True)
    table = front(problem, everything).assign(kind="front")
    rows = [table]
    for answer in queries:
        row = answer.iloc[0]
        rows.append(pd.DataFrame([{"kind": f"query: {row['question']}", **{n: row.get(n) for n in problem.names},
                                   "epsilon": row["epsilon"], "utility": row["utility"], "utility_min": row["utility_min"],
                                   "utility_max": row["utility_max"], "predicted_utility": row["predicted_utility"],
                                   "predicted_sd": row["predicted_sd"], "method": "query"}]))
    out = pd.concat(rows, ignore_index=True)
    first = ["kind", "epsilon", "utility", "predicted_utility", "predicted_sd", "utility_min", "utility_max"]
    return out[[c for c in first if c in out] + [c for c in out if c not in first]].replace({np.nan: None})
