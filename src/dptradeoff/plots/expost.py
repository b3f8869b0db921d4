"""Paper 004 Fig. 1: standard deviation vs expectation of the number of invocations."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .common import save


def fig1(curves: pd.DataFrame, eps: float, eps_prime: float, path: str, config: str) -> None:
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    for (method, g), style in zip(curves.groupby("method", sort=False), ("-", "--")):
        g = g.sort_values("mean")
        ax.plot(g["mean"], g["std"], style, label=method)
    ax.set_xlabel("Expectation")
    ax.set_ylabel("Standard deviation")
    ax.legend(frameon=False)
    caption = (f"Paper 004 Fig. 1. Number of invocations: Alg. 3 with geometric dropping (Thm 11) vs "
               f"Papernot-Steinke Cor. 3 (eta = eps'/eps); eps = {eps}, eps' = {eps_prime}.")
    save(fig, path, caption, ["closed forms (no data)"], config)
