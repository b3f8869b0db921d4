"""One problem's front: every evaluated point by method, the front of them all restated by fresh trainings
(`bo.fresh_front`: the utilities a user reads come from trainings made after the front was chosen), and the
answers of front queries, each labelled by what it rests on (fresh trainings, a point's own trainings or the GP),
beside its retraining."""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from ..problems.tables import succeeded
from ..study import every_point
from ..stats.hypervolume import objectives
from .common import error_label, front_line, save

METHOD_STYLES = {"random": ("0.6", "random sampling"), "uniform": ("0.8", "uniform random"), "dpareto": ("C0", "DPareto"),
                 "optuna-tpe": ("C2", "Optuna TPE"), "optuna-gp": ("C3", "Optuna GP"), "botorch": ("C4", "BoTorch qLogNEHVI"),
                 "moasha": ("C5", "Syne Tune MOASHA"),
                 "comparison": ("0.85", "Table 2's random sample")}   # a grid<k>: grey, named as its folder


# The error axis is logarithmic where the front's errors span more than this factor (a decade): on a
# linear axis such a front lies flat along 0 (e.g. errors 2e-4 to 0.1).
LOG_ERROR_SPAN = 10.0


def log_error_axis(front: np.ndarray) -> bool:
    """Whether a front (rows of epsilon, error) is drawn on a log error axis: every error on it is > 0 and
    the largest is more than LOG_ERROR_SPAN times the smallest."""
    errors = np.asarray(front, dtype=float).reshape(-1, 2)[:, 1] if len(front) else np.array([])
    errors = errors[np.isfinite(errors)]
    return bool(len(errors) and errors.min() > 0 and errors.max() > LOG_ERROR_SPAN * errors.min())


def _trainings(count: int) -> str:
    return f"{count} training{'s' if count != 1 else ''}"


def trivial_warning(evaluations: dict, trivial: tuple[float, str] | None) -> str:
    """A loud sentence where no successful evaluation beats the trivial predictor, else "": a front drawn
    from an oracle that learns nothing (e.g. a library broken against its dependencies) is no front."""
    if trivial is None:
        return ""
    rows = [frame for frame in evaluations.values() if len(frame)]
    utilities = pd.concat([succeeded(frame)["utility"] for frame in rows]) if rows else pd.Series(dtype=float)
    if (utilities > trivial[0]).any():
        return ""
    return (f"WARNING: no evaluated point beats the {trivial[1]} (utility {trivial[0]:.4g}): the algorithm learned "
            f"nothing here; check the oracle and the library versions it trains with before reading this front.")


def trivial_predictor(problem, data, utility_floor: float | None = None) -> tuple[float, str] | None:
    """(utility, what it is) of the predictor that ignores the data: problems.<name>.utility_floor where the
    config states it, else the oracle's `trivial_utility(data)` (the majority class's accuracy for the
    built-in classifiers); None where neither is known."""
    if utility_floor is not None:
        return float(utility_floor), "trivial predictor (utility_floor)"
    trivial = problem.oracle.trivial_utility(data)
    return (float(trivial), "majority class / trivial predictor") if trivial is not None else None


def shaded_region(proposals: list[pd.DataFrame], metrics_region, metrics_how: str) -> tuple:
    """(Region, what it is, a note) for the front figure's band and the table: the region DPareto's chain
    searched in its last round (`region_low`, `region_high` of its last proposal file), as derived from its own
    evaluations; where the front metrics' region (every method's rows pooled) differs, the note gives it. A chain
    with no region (the paper's HVPoI) or no chain: the metrics' region, named as theirs."""
    from ..stats.front_metrics import Region

    last = proposals[-1] if proposals else None
    if last is None or "region_low" not in last or last["region_low"].isna().all():
        return (metrics_region, f"the front metrics' region ({metrics_how}), every method's rows pooled", "")
    low, high = float(last["region_low"].iloc[0]), float(last["region_high"].iloc[0])
    proposed = pd.concat([p["predicted_epsilon"] for p in proposals if "predicted_epsilon" in p], ignore_index=True) \
        if any("predicted_epsilon" in p for p in proposals) else pd.Series(dtype=float)
    proposed = proposed[np.isfinite(proposed.to_numpy(float))] if len(proposed) else proposed
    if len(proposed):   # where the chain's proposals were: a derived region may reach beyond them
        clipped = max(low, float(proposed.min())), min(high, float(proposed.max()))
        low, high = clipped if clipped[0] < clipped[1] else (low, high)
    searched = Region(low, high, metrics_region.error_floor)
    note = ""
    if not np.allclose([searched.epsilon_low, searched.epsilon_high],
                       [metrics_region.epsilon_low, metrics_region.epsilon_high], rtol=1e-9):
        note = (f"The front metrics (tables/front_quality) count in ε [{metrics_region.epsilon_low:.3g}, "
                f"{metrics_region.epsilon_high:.3g}] ({metrics_how}, from every method's rows pooled).")
    return (searched, f"the region DPareto's chain searched in its last round ({metrics_how}), within the epsilons "
                      f"its proposals had", note)


def chain_privacy(proposals: list[pd.DataFrame]) -> str:
    """How the chain's acquisition knew epsilon, for the table: its rounds' privacy models; a loud sentence where
    any round used the privacy GP's prediction instead of the oracle's epsilon."""
    from ..bo.exact_privacy import GP_EPSILON

    models = pd.concat([p["privacy_model"].iloc[:1] for p in proposals if "privacy_model" in p], ignore_index=True) \
        if any("privacy_model" in p for p in proposals) else pd.Series(dtype=str)
    if models.empty:
        return "The chain's acquisition learned epsilon with a GP (the paper's algorithm)." if proposals else ""
    text = "Epsilon in the chain's acquisition: " + "; ".join(
        f"{model} ({count} of {len(models)} rounds)" for model, count in models.value_counts(sort=False).items()) + "."
    sizes = pd.concat([p.groupby("round")["batch_size"].first() for p in proposals if "batch_size" in p],
                      ignore_index=True) if any("batch_size" in p for p in proposals) else pd.Series(dtype=int)
    batches = sizes[sizes > 1]
    if len(batches):   # bo.batch_rounds: a point cheaper to evaluate than a round to choose
        text += (f" Batch rounds (a point cheaper to evaluate than a round to choose): {len(batches)} of {len(models)} "
                 f"rounds trained {int(batches.min())}-{int(batches.max())} points each ({int(sizes.sum())} points "
                 f"in all rounds).")
    predicted = int((models == GP_EPSILON).sum())
    if predicted:
        text += (f" WARNING: {predicted} rounds ranked and chose points by the privacy GP's predicted epsilon, not the "
                 f"oracle's (the oracle failed on candidate points; see the rounds' logs).")
    return text


LEGEND_WIDTH = 58   # characters a legend label wraps at (two columns below the axes: never wider than the plot)


def _wrapped(label: str) -> str:
    return textwrap.fill(label, LEGEND_WIDTH)


def _predicted_bar(row) -> tuple[float, float, str]:
    """A query answer's errorbar in error (below, above its stated error) and what it is: the interval for one
    training where the row has it (bo.query.FrontQuery.interval, or the fresh trainings' order statistics), else
    (rows written before it) +- predicted_sd. A degenerate interval (zero width: every training alike) is no bar,
    (0, 0)."""
    from ..bo.query import GP_SOURCE, INTERVAL_LABEL

    low, high = row.get("interval_low"), row.get("interval_high")
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return row["predicted_sd"], row["predicted_sd"], "± sd of an R-replication mean"
    level = float(row.get("interval_level", np.nan))
    source = row.get("probability_source")
    what = (f"{level:.0%} predictive interval for one training from {source}" if source and source != GP_SOURCE
            else f"{level:.0%} {INTERVAL_LABEL}")
    if not high > low:
        return 0.0, 0.0, f"every training alike: no interval drawn (the {level:.0%} interval is [{low:.4g}, {high:.4g}])"
    return max(high - row["predicted_utility"], 0.0), max(row["predicted_utility"] - low, 0.0), what


def answer_basis(row) -> str:
    """What a query answer's stated utility rests on, for the figure's legend: its fresh trainings (made after it was
    chosen), its own trainings, or the GP's prediction."""
    from ..bo.query import GP_SOURCE

    epsilon = row.get("epsilon")
    if epsilon is None or not np.isfinite(float(epsilon)):
        return "no answer"
    fresh = row.get("fresh_trainings")
    fresh = int(fresh) if fresh is not None and np.isfinite(float(fresh)) else 0
    if fresh:
        return f"mean of {fresh} fresh trainings made after it was chosen"
    source = row.get("probability_source")
    if "search_note" in row and "settled" in row or "tier_training" in row:   # the one rule's row: no fresh training
        return "no fresh training (its budget bought none)"
    if source and source != GP_SOURCE and "GP" not in str(source).split("interval:")[0]:
        return f"its own trainings ({len(_listed(row.get('trainings')))})"
    return "GP prediction"   # a row written before the one rule


def _front_points(problem, evaluations: dict[str, pd.DataFrame], fresh) -> tuple[pd.DataFrame, str]:
    """(the front's rows as the table lists them, what their utilities are): restated by fresh trainings
    (`bo.fresh_front.front_rows`) where `fresh` (that rule's rows) is given, else at the means of the trainings that
    found them (`bo.query.front`)."""
    from ..bo.fresh_front import front_rows
    from ..bo.query import front

    if fresh is not None:
        return front_rows(problem, every_point(evaluations), fresh), "fresh"
    return front(problem, every_point(evaluations)).assign(search_utility=lambda f: f["utility"]), "search"


def front_figure(problem: str, utility: str, evaluations: dict[str, pd.DataFrame], queries: list[pd.DataFrame],
                 out: str, config: str, trivial: tuple[float, str] | None = None, region: tuple | None = None,
                 fresh: pd.DataFrame | None = None, definition=None):
    """The figure (returned, its file written to `out`): every evaluated point by the method that found
    it (`evaluations`: method -> its file's rows, `study.every_point`), at the means of the trainings that found
    it; the front, restated by fresh trainings where `fresh` (the `front_fresh` rule's rows, `bo.fresh_front`) and
    `definition` (the Problem) are given, else the front of the points as found; the query answers, each labelled
    by what it rests on; where `trivial` (`trivial_predictor`) is known the trivial predictor's error as a line, and
    where `region` ((`front_metrics.Region`, what it is, a note): `shaded_region`) is given the region of interest as
    a band. The legend lies below the axes, never wider than the plot."""
    fig, ax = plt.subplots(figsize=(7.5, 7.0))
    if region is not None:
        ax.axvspan(region[0].epsilon_low, region[0].epsilon_high, color="0.93", zorder=0,
                   label=f"region of interest: ε in [{region[0].epsilon_low:.2g}, {region[0].epsilon_high:.2g}]")
    found = every_point(evaluations)
    for method in dict.fromkeys([*evaluations, *found["method"]]):
        color, label = METHOD_STYLES.get(method, ("C7", method))
        frame = found[found["method"] == method]
        if frame.empty:
            continue
        ok = succeeded(frame)
        failed = len(frame) - len(ok)
        ax.scatter(ok["epsilon"], ok["error"], s=9, color=color, alpha=0.7,
                   label=f"{label} ({len(ok)} points{f', {failed} failed' if failed else ''}; search means)")
    everything = pd.concat([succeeded(f) for f in evaluations.values()], ignore_index=True)
    if fresh is not None and definition is not None:
        on_front, _ = _front_points(definition, evaluations, fresh)
        count = int(on_front["n_trainings"].max()) if len(on_front) else 0
        # the listed points as listed, in epsilon order: their listing trainings chose nothing, so a point may list
        # below a more private one (no lower envelope is taken again: that would choose by them)
        ordered = on_front.sort_values("epsilon", kind="stable")
        drawn = ordered[["epsilon", "error"]].to_numpy(float)
        ax.step(drawn[:, 0], drawn[:, 1], where="post", color="k", lw=1.5,
                label=f"front restated by fresh trainings ({count} a point, made after it was chosen)")
    else:
        on_front = None
        drawn = front_line(ax, objectives(everything), color="k", lw=1.5,
                           label="front of every evaluated point (search means)")
    _front_uncertainty(ax, everything, on_front)
    for i, answer in enumerate(queries):
        row = answer.iloc[0]
        if not np.isfinite(float(row.get("epsilon", np.nan))):
            continue
        color = f"C{(i % 8) + 1}"
        stated_error = 1.0 - row["predicted_utility"]
        below, above, what = _predicted_bar(row)
        basis = answer_basis(row)
        bar = [[below], [above]] if below + above > 0 else None
        ax.errorbar([row["epsilon"]], [stated_error], yerr=bar, fmt="o", mfc="white", color=color, capsize=3,
                    label=_wrapped(f"{row['question']}: {basis}" + (f", {what}" if bar is not None or "alike" in what
                                                                     else "")))
        spread = row["utility_max"] - row["utility_min"]
        realised = [[row["utility_max"] - row["utility"]], [row["utility"] - row["utility_min"]]]
        ax.errorbar([row["epsilon"]], [row["error"]], yerr=realised if spread > 0 else None, fmt="s",
                    color=color, capsize=3,
                    label=_wrapped(f"{row['question']}: retrained ({_trainings(int(row['repeats']))}"
                                   + (", min-max)" if spread > 0 else ")")))
        if row["question"].startswith("epsilon"):
            ax.axvline(float(row["target"]), color=color, ls=":", lw=1)
        else:
            ax.axhline(1.0 - float(row["target"]), color=color, ls=":", lw=1)
    if trivial is not None:
        ax.axhline(1.0 - trivial[0], color="0.3", ls="--", lw=1, label=f"{trivial[1]}: {1.0 - trivial[0]:.3g}")
    ax.set_xscale("log")
    log_error = log_error_axis(drawn)
    if log_error:
        ax.set_yscale("log")
    ax.set_xlabel("ε (exact, from the privacy oracle)")
    ax.set_ylabel(error_label(utility) + (" (log scale)" if log_error else ""))
    # below the axes, never over a point, and never wider than the plot
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.11), borderaxespad=0.0, framealpha=0.8, ncol=2)
    restated = on_front is not None
    caption = (f"The privacy-utility front of {problem}: evaluated points at the means of the trainings that found "
               + ("them, the front restated by fresh trainings made after it was chosen (each point's utility their mean, "
                  "± 1.28 standard errors of it; the front recomputed until every point on it rests on fresh "
                  "trainings)" if restated else
                  "them, their front (each front point with ± 1.28 standard errors of its trainings' mean, hollow where "
                  "it rests on fewer than 6 trainings)")
               + ", and the answers to front queries (open: the utility an answer states, labelled by what it rests on, "
                 "with its interval for one training; filled: its retraining, min-max). ε on a log axis.")
    if log_error:
        caption += (f" Error on a log axis: the front's errors span more than a decade ({drawn[:, 1].min():.2g} to "
                    f"{drawn[:, 1].max():.2g}).")
    if trivial is not None:
        caption += f" Dashed: the error of the {trivial[1]}, {1.0 - trivial[0]:.4g}."
    if region is not None:
        caption += (f" Shaded: {region[1]}, ε in [{region[0].epsilon_low:.3g}, {region[0].epsilon_high:.3g}]."
                    + (f" {region[2]}" if len(region) > 2 and region[2] else ""))
    sources = [s for f in evaluations.values() for s in f["source_label"].tolist()]
    save(fig, out, caption, sources, config)
    plt.close(fig)
    return fig


def _front_uncertainty(ax, everything: pd.DataFrame, on_front: pd.DataFrame | None = None) -> None:
    """Each front point with what its trainings support: +- z_0.9 standard errors of its trainings' mean
    (`bo.support`; `on_front`: the restated front's rows, its fresh trainings'), hollow where it rests on fewer than
    ANSWER_TRAININGS trainings."""
    from ..bo.query import ANSWER_TRAININGS
    from ..bo.support import SUPPORT_LEVEL, with_support
    from ..pareto import pareto_mask

    if on_front is None:
        supported = with_support(everything)
        on_front = supported[pareto_mask(supported[["epsilon", "error"]].to_numpy(float))]
    z = stats.norm.ppf(SUPPORT_LEVEL)
    for few, style in ((False, {"mfc": "k"}), (True, {"mfc": "white"})):
        rows = on_front[(on_front["n_trainings"] < ANSWER_TRAININGS) == few]
        if rows.empty:
            continue
        se = rows["utility_se"].to_numpy(float)
        ax.errorbar(rows["epsilon"], rows["error"], yerr=np.where(se > 0, z * se, np.nan), fmt="o", ms=3.5, color="k",
                    capsize=2, lw=0.8, zorder=5, **style,
                    label=(f"front points on < {ANSWER_TRAININGS} trainings" if few else "front points")
                    + f": ± {z:.2f} standard errors of their mean")


def _listed(values) -> list:
    """A list column's value as read back from Parquet (an array), or [] where the row has none."""
    return [] if values is None or (np.ndim(values) == 0 and pd.isna(values)) else list(values)


def front_table(problem, evaluations: dict[str, pd.DataFrame], queries: list[pd.DataFrame],
                fresh: pd.DataFrame | None = None) -> pd.DataFrame:
    """The front (hyperparameters, epsilon, utility, its trainings' count, standard error and supported utility
    (`bo.support`), which method found it): where `fresh` (the `front_fresh` rule's rows) is given, the front
    restated by fresh trainings (`bo.fresh_front.front_rows`: `utility` their mean, `search_utility` and
    `search_n_trainings` those of the trainings that found the point); else the front of every evaluated point at those means.
    Then one row per query answer (suggestion, exact epsilon, the utility it states (predicted_utility: its fresh
    trainings' mean, or the GP's prediction) with its interval for one training, utility answers: the probability
    that one training reaches the target (below_level, settled), the trainings the answer rests on, realised
    utility of its retrainings, the share of them inside the interval (utility answers: reaching the target), and
    the domain bounds it sits at)."""
    from ..bo.query import trainings_text

    table = _front_points(problem, evaluations, fresh)[0].assign(kind="front").drop(columns=["error"], errors="ignore")
    rows = [table]
    for answer in queries:
        row = answer.iloc[0]
        rows.append(pd.DataFrame([{"kind": f"query: {row['question']}", **{n: row.get(n) for n in problem.names},
                                   "epsilon": row["epsilon"], "utility": row["utility"], "utility_min": row["utility_min"],
                                   "utility_max": row["utility_max"], "predicted_utility": row["predicted_utility"],
                                   "predicted_sd": row["predicted_sd"], "stated_by": answer_basis(row),
                                   **{k: row.get(k) for k in ("interval_low", "interval_high", "interval_level",
                                                              "reach_probability", "probability_source",
                                                              "runs_in_interval", "runs_reaching_target",
                                                              "below_level", "settled", "search_trainings",
                                                              "search_note", "stopped", "edge")},
                                   "trainings": trainings_text(_listed(row.get("trainings"))),
                                   **{k: row.get(k) for k in ("fresh_trainings", "budget")},
                                   "method": "query"}]))
    out = pd.concat(rows, ignore_index=True)
    first = ["kind", "epsilon", "utility", "n_trainings", "utility_se", "utility_supported", "chosen_utility", "search_utility",
             "search_n_trainings", "predicted_utility", "stated_by", "predicted_sd", "interval_low",
             "interval_high", "interval_level", "reach_probability", "probability_source", "runs_in_interval",
             "runs_reaching_target", "below_level", "settled", "trainings", "search_trainings", "fresh_trainings", "budget",
             "search_note", "stopped",
             "edge", "utility_min", "utility_max"]
    return out[[c for c in first if c in out] + [c for c in out if c not in first]].replace({np.nan: None})
