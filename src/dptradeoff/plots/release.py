"""A release's figure and table: the tuning front, the released model at its total epsilon (the
guarantee) and at eps0 (one trial's training alone), and the front's best utility at the total:
the price of private tuning, shown."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .common import save


def release_figure(record: dict, out: str, config: str) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.6))
    front = record["front"] or {"epsilon": [], "utility": [], "best_utility_at_total": math.nan}   # None: private tuning
    eps, util = np.asarray(front["epsilon"], dtype=float), np.asarray(front["utility"], dtype=float)
    if len(eps):
        ax.step(eps, util, where="post", color="0.4", lw=1.5,
                label=f"tuning front ({record['tuning']['problem']}: tuning rows, not protected)")
        ax.scatter(eps, util, s=10, color="0.4")
    total, eps0, measured = record["guarantee"]["epsilon"], record["eps0"], record["test_utility"]
    ax.plot([eps0, total], [measured, measured], color="C3", lw=1, ls=":")
    ax.scatter([total], [measured], color="C3", marker="*", s=140, zorder=3,
               label=f"released model at its total ε = {total:.3g} (the guarantee, tuning included)")
    ax.scatter([eps0], [measured], facecolors="white", edgecolors="C3", marker="o", s=60, zorder=3,
               label=f"the same model at ε0 = {eps0:.3g} (one trial's training alone: not the guarantee)")
    best = front["best_utility_at_total"]
    if math.isfinite(best):
        ax.scatter([total], [best], color="C0", marker="D", s=45, zorder=3,
                   label=f"front's best at ε ≤ {total:.3g}: {best:.3f} (tuning not counted)")
        ax.annotate("", xy=(total, measured), xytext=(total, best),
                    arrowprops=dict(arrowstyle="->", color="C0", lw=1))
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    # wrapped to the axes' height: a utility's own name may be long, and the label must not run into the footer
    ax.set_ylabel(textwrap.fill(f"{record['utility']} (release: test rows; front: tuning held-out rows)", 44), fontsize=8)
    ax.legend(fontsize=6, loc="lower right", framealpha=0.85)
    caption = (f"Releasing {record['problem']} at total (ε, δ) = ({total:.3g}, {record['guarantee']['delta']:g}): "
               + ("the price of private tuning." if record["front"] else "tuned privately on the private rows: no front."))
    save(fig, out, caption, [record["tuning"]["rows"] or "", record["private_rows"]], config)
    plt.close(fig)


def release_table(record: dict, config: str) -> tuple[pd.DataFrame, str]:
    """(quantity, value, what it is) rows, and the table's note."""
    g, released = record["guarantee"], record["released"]
    hyper = ", ".join(f"{k} = {_fmt(v)}" for k, v in released["hyperparameters"].items())
    rows = [
        ("total epsilon", g["epsilon"], f"the guarantee at delta = {g['delta']:g} (target {g['target_epsilon']:g}); covers {g['covers']}"),
        ("delta", g["delta"], "the guarantee's delta"),
        ("neighbouring relation", g["neighbouring"], "what the guarantee protects"),
        ("accounting", g["accounting"], ""),
        ("eps0", record["eps0"], "each trial's training alone, at delta (every candidate's noise calibrated to it): NOT the guarantee"),
        ("one trial's epsilon", record["trial_epsilon"], "one trial's training and noisy score, at delta: NOT the guarantee"),
        ("selection", record["selection"]["describe"], ""),
        ("candidates", len(record["candidates"]),
         "settings drawn from the domain's prior before any data was read (those that reach eps0)" if record["front"] is None
         else "front points nearest the total epsilon (and their perturbations)" if record["candidates_beat_trivial_predictor"]
         else "the whole front, nearest the total epsilon: no front point beat the trivial predictor (a short tuning study)"),
        ("score noise sd", record["score"]["noise_sd"],
         f"Gaussian, on the {record['utility']} over {record['score']['validation_rows']} validation rows (sensitivity 1/{record['score']['validation_rows'] - 1})"),
        ("released hyperparameters", hyper, "covered by the total (the selection's output)"),
        ("released training epsilon", released["training_epsilon"], "its training alone, at delta: NOT the guarantee"),
        (f"test {record['utility']}", record["test_utility"], f"measured once on {record['test_rows']} test rows: not covered by the total"),
        *([("front's best utility at epsilon <= total", record["front"]["best_utility_at_total"],
            "tuning front (tuning rows' held-out part), its tuning not counted in its epsilon"),
           ("front's best utility at epsilon <= eps0", record["front"]["best_utility_at_eps0"], "the same front at eps0")]
          if record["front"] else []),
        ("randomness", g["randomness"], ""),
        ("tuning data", record["tuning"]["how"], record["tuning"]["rows"] or ""),
        ("private rows", record["private_rows"], "protected by the total"),
        ("share of the training rows protected", record.get("rows_protected", math.nan),
         "the private rows' share of the dataset's training rows (the rest are tuning rows, given up)"),
    ]
    table = pd.DataFrame(rows, columns=["quantity", "value", "what it is"])
    table["value"] = table["value"].map(_fmt)
    note = (f"Release of {record['problem']}: {g['not_covered']}. Config: {config}.")
    return table, note


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
