"""Paper 004's Fig. 1 and Tables 1-2 as tables of numbers: the invocation statistics, the per-trial
results of every method on each row (a synthetic draw or the Reddit histogram), and the tables
themselves (our mean +- std beside the paper's) with their notes. Table 3: ml_experiments.py."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data.reddit import power_law_histogram
from ..io import read_frame, read_provenance
from ..seeds import rng as make_rng
from .distributions import alg3_invocations, tnb_gamma, tnb_moments
from .settings import ExpostSettings, SyntheticThreads
from .threads import ThreadTable

# --- Fig. 1 ----------------------------------------------------------------------------------------


def invocation_curves(eps: float, eps_prime: float, max_mean: float, points: int = 60) -> pd.DataFrame:
    """Std vs mean of the number of runs: Alg. 3 (Thm 11, geometric dropping) with d copies of one
    eps-DP mechanism, and Papernot-Steinke Cor. 3 with eta = eps'/eps (same (2 eps + eps') cost)."""
    ours_d = np.unique(np.geomspace(1, max_mean / alg3_invocations(1, eps, eps_prime)[0], points).astype(int))
    m, s = alg3_invocations(ours_d, eps, eps_prime, "geometric")
    rows = [{"method": "Theorem 11", "parameter": float(d), "mean": float(a), "std": float(b)} for d, a, b in zip(ours_d, m, s)]
    eta = eps_prime / eps
    for target in np.geomspace(1.05, max_mean, points):
        gamma = tnb_gamma(eta, float(target))
        mean, std = tnb_moments(eta, gamma)
        rows.append({"method": "Papernot & Steinke 2022", "parameter": gamma, "mean": mean, "std": std})
    return pd.DataFrame(rows)


# --- Tables 1-2 ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SyntheticRow:
    """A row `S<samples>`: a fresh draw of the synthetic power law per trial."""
    name: str
    law: SyntheticThreads
    seed: int

    @property
    def samples(self) -> int:
        return int(self.name[1:])

    @property
    def threads(self) -> int:
        return self.law.threads

    @property
    def source(self) -> str:
        return (f"synthetic: {self.samples} samples of the power law x^{self.law.exponent} on [{self.threads}], "
                f"a fresh draw per trial")

    def counts(self, trial: int) -> np.ndarray:
        draw = make_rng(self.seed, "expost", self.name, "draw", trial)
        return power_law_histogram(self.samples, self.threads, self.law.exponent, draw)["authors"].to_numpy()


@dataclass(frozen=True)
class HistogramRow:
    """The row `Reddit`: the same histogram (results/data/reddit) in every trial."""
    name: str
    histogram: np.ndarray
    source: str

    @property
    def threads(self) -> int:
        return len(self.histogram)

    def counts(self, trial: int) -> np.ndarray:
        return self.histogram


def thread_row(name: str, settings: ExpostSettings, seed: int, histogram_path: str | None = None):
    """The row `name` of Tables 1-2: "Reddit" (the histogram at `histogram_path`) or "S<samples>"."""
    if name == "Reddit":
        return HistogramRow(name, read_frame(histogram_path)["authors"].to_numpy(),
                            read_provenance(histogram_path).get("source_label", "unknown"))
    return SyntheticRow(name, settings.synthetic, seed)


def thread_trials(row, table: ThreadTable, settings: ExpostSettings, seed_parts: tuple) -> pd.DataFrame:
    """Per-trial answers and precision of every method of `table` on `row` (`settings.trials` trials);
    every method of a trial sees the same counts in the same order."""
    setting = settings.setting
    methods = table.methods()
    rows = []
    for trial in range(settings.trials):
        ordered = settings.thread_order.order(row.counts(trial), make_rng(*seed_parts, "thread_order", trial))
        for method in methods:
            out = method.run(ordered, setting, make_rng(*seed_parts, table.name, method.name, trial))
            rows.append({"method": method.name, "trial": trial, "answers": out.answers, "correct": out.correct,
                         "precision": out.precision, "spent": out.spent})
    return pd.DataFrame(rows)


def guarantees(table: ThreadTable, settings: ExpostSettings) -> dict[str, str]:
    """What each method's numbers guarantee, as printed beside them. An order that reads the true counts
    (`by_count`) makes every guarantee conditional on that ranking being public."""
    setting = settings.setting
    condition = settings.thread_order.condition
    return {m.name: m.guarantee(setting) + ("" if m.guarantee(setting).startswith("NONE") else condition)
            for m in table.methods()}


def thread_table(frames: dict[str, pd.DataFrame], table: ThreadTable, settings: ExpostSettings) -> pd.DataFrame:
    """One row per dataset and method: our precision and answers (mean, sd over trials), what they
    guarantee, and the paper's values for that method (for an `*_as_published` mode: the paper's
    column it reproduces)."""
    labels = guarantees(table, settings)
    out = []
    for row, frame in frames.items():
        for method, g in frame.groupby("method", sort=False):
            record = {"dataset": row, "method": method, "guarantee": labels[method],
                      "precision": g["precision"].mean(), "precision_sd": g["precision"].std(ddof=0),
                      "answers": g["answers"].mean(), "answers_sd": g["answers"].std(ddof=0)}
            published = table.published.get(row, {}).get(method.removesuffix("_as_published"))
            if published is not None:
                record.update(zip(("paper_precision", "paper_precision_sd", "paper_answers", "paper_answers_sd"),
                                  published))
                record["answers_within_paper_sd"] = bool(abs(record["answers"] - published[2]) <= published[3])
            out.append(record)
    return pd.DataFrame(out)


def thread_table_report(frames: dict[str, pd.DataFrame], sources: dict[str, str], table: ThreadTable,
                        settings: ExpostSettings, config_label: str) -> tuple[pd.DataFrame, str]:
    """Table 1 or 2 from its rows' trials (`frames`) and data sources (`sources`), both by row, with
    each row's source and trial count; and its note."""
    frame = thread_table(frames, table, settings)
    frame.insert(1, "source", frame["dataset"].map(sources))
    frame.insert(2, "trials", frame["dataset"].map({row: int(f["trial"].nunique()) for row, f in frames.items()}))
    return frame, thread_table_note(table, settings, config_label)


def thread_table_note(table: ThreadTable, settings: ExpostSettings, config_label: str) -> str:
    return (f"Paper 004 {table.title}: {table.describe(settings.budget, settings.delta)}; levels eps_i = "
            f"{settings.grid.start} * {settings.grid.ratio:.4f}^i; the accept test's sigma for Laplace noise is the "
            f"{settings.accept_sigma.replace('_', ' ')}; threads in {settings.thread_order.note}; "
            f"precision = fraction of produced answers within 10% of the truth; mean and sd over trials; the guarantee "
            f"column says what each method's numbers are worth (NONE = reproduces the paper, no guarantee); paper_* "
            f"= the paper's values for that method. Config: {config_label}.")
