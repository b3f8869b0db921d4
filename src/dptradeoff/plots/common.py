"""Shared pieces of every figure: style, Pareto-front drawing, provenance footer, atomic PDF writes."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402

from ..bo.pareto import pareto_front  # noqa: E402
from ..io import atomic_path  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")


def front_line(ax, points: np.ndarray, **style):
    """Draw the Pareto front of (epsilon, error) points as a staircase; returns the front."""
    front = pareto_front(points)
    if len(front):
        ax.step(front[:, 0], front[:, 1], where="post", **style)
    return front


def provenance_text(sources: list[str], config: str) -> str:
    unique = sorted(set(s for s in sources if s))
    return "Data: " + "; ".join(unique) + f"  |  config: {config}"


def save(fig, path: str, caption: str, sources: list[str], config: str) -> None:
    """Write the figure as PDF atomically, the caption as its title, the data sources and config in a
    footer and in the PDF metadata (Subject: caption and provenance). No CreationDate: the file's bytes
    are its figure's alone (a release's figure must not date its run, docs/release.md)."""
    fig.suptitle(caption, fontsize=9)
    text = provenance_text(sources, config)
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))  # room for the suptitle and the footer
    fig.text(0.01, 0.005, text, fontsize=6, color="0.35", ha="left", va="bottom", wrap=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="pdf", bbox_inches="tight",
                    metadata={"Title": caption.split(".")[0], "Subject": f"{caption} {text}", "Creator": "dptradeoff",
                              "CreationDate": None})
    plt.close(fig)
