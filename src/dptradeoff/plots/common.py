"""Shared pieces of every figure: style, Pareto-front drawing, provenance footer, atomic PDF writes."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402
import textwrap  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402

from ..pareto import pareto_front  # noqa: E402
from ..io import atomic_path  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")


def front_line(ax, points: np.ndarray, **style):
    """Draw the Pareto front of (epsilon, error) points as a staircase; returns the front."""
    front = pareto_front(points)
    if len(front):
        ax.step(front[:, 0], front[:, 1], where="post", **style)
    return front


_NAME = re.compile(r"[^\W\d][\w\s.'-]*")               # accuracy, F1, test accuracy, macro-F1
_ONE_MINUS = re.compile(r"\s*1\s*[-−]\s*(?P<rest>.+?)\s*$")   # 1 - X, 1 − X, 1-X


def _top_level_sum(text: str) -> bool:
    """Whether `text` has a + or - outside brackets and |...| (then 1 - (text) is not 1 - text)."""
    depth, bars = 0, 0
    for position, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "|":
            bars ^= 1
        elif char in "+-−" and depth == 0 and not bars and position > 0 and text[position - 1] not in "eE(":
            return True
    return False


def error_label(utility: str) -> str:
    """The axis label of error = 1 − utility, for a utility described as `utility` (`problems.<name>.utility`):
    "1 − accuracy" for a name; the rest X for a description "1 - X" whose X is one term (1 − (1 − X) = X),
    as "X = 1 − utility"; "1 − (description)" for any other formula."""
    text = " ".join(str(utility).split())
    if not text:
        return "1 − utility"
    if _NAME.fullmatch(text):
        return f"1 − {text}"
    one_minus = _ONE_MINUS.fullmatch(text)
    if one_minus and not _top_level_sum(one_minus["rest"]):
        return f"{one_minus['rest']} = 1 − utility"
    return f"1 − ({text})"


def provenance_text(sources: list[str], config: str) -> str:
    unique = sorted(set(s for s in sources if s))
    return "Data: " + "; ".join(unique) + f"  |  config: {config}"


def save(fig, path: str, caption: str, sources: list[str], config: str) -> None:
    """Write the figure as PDF atomically, the caption as its title, the data sources and config in a
    footer and in the PDF metadata (Subject: caption and provenance); the title wraps to the figure's width.
    No CreationDate: the file's bytes
    are its figure's alone (a release's figure must not date its run, docs/release.md)."""
    fig.suptitle(textwrap.fill(caption, width=max(40, int(fig.get_figwidth() * 17))), fontsize=9)
    text = provenance_text(sources, config)
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))  # room for the suptitle and the footer
    fig.text(0.01, 0.005, text, fontsize=6, color="0.35", ha="left", va="bottom", wrap=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="pdf", bbox_inches="tight",
                    metadata={"Title": caption.split(".")[0], "Subject": f"{caption} {text}", "Creator": "dptradeoff",
                              "CreationDate": None})
    plt.close(fig)
