"""The audit figure: each audited point's proven epsilon beside its audited lower bound, at its utility."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..audit.study import joint_confidence
from .common import save


def audit_figure(problem: str, table: pd.DataFrame, utilities: pd.Series, out: str, config: str, sources: list[str],
                 warning: str = ""):
    """Proven epsilon (filled) and audited epsilon_lb (open) of each audited point, joined at its measured
    utility (`utilities`, aligned with `table`'s rows; NaN where the point was not evaluated)."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    y = utilities.to_numpy(float)
    y = np.where(np.isfinite(y), y, np.arange(len(table)))   # given points without a measured utility: by row
    floor = np.nanmin(table["epsilon"].to_numpy(float)) / 10
    lower = np.maximum(table["epsilon_lb"].to_numpy(float), floor)
    for k, (proven, audited) in enumerate(zip(table["epsilon"], lower)):
        ax.plot([audited, proven], [y[k], y[k]], color="0.6", lw=1)
    ax.scatter(table["epsilon"], y, color="C0", zorder=3, label="proven ε (the accountant's upper bound)")
    over = table["epsilon_lb"].to_numpy(float) > table["epsilon"].to_numpy(float)
    ax.scatter(lower[~over], y[~over], facecolors="white", edgecolors="C1", zorder=3,
               label=f"audited ε lower bound ({joint_confidence(table):.0%} confidence, all "
                     f"points together; at the axis floor: 0)")
    if over.any():
        ax.scatter(lower[over], y[over], color="red", marker="X", s=60, zorder=4, label="audited bound above proven ε")
    ax.set_xscale("log")
    ax.set_xlabel(f"ε at δ = {table['delta'].iloc[0]:g}")
    ax.set_ylabel("utility (mean of the study's replications)" if np.isfinite(utilities).any() else "audited point")
    ax.legend(fontsize=7, loc="best", framealpha=0.8)
    caption = (f"Audit of {problem}: proven ε (filled) and the audited lower bound (open) of {len(table)} points; "
               f"a lower bound above the proven ε proves a privacy bug." + (f" {warning}" if warning else ""))
    save(fig, out, caption, sources, config)
    plt.close(fig)
    return fig
