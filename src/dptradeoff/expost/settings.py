"""The config's `expost` section as typed settings, built once by the rule layer
(`ExpostSettings.from_config`) and passed down."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .. import UserError
from .baselines import geometric_grid
from .threads import ACCEPT_SIGMAS, THREAD_ORDERS, Setting, Table1, Table2, ThreadOrder, ThreadTable


@dataclass(frozen=True)
class LevelGrid:
    """Tables 1-2's levels eps_i = start * ratio^i."""
    start: float
    ratio: float


@dataclass(frozen=True)
class SyntheticThreads:
    """Tables 1-2's synthetic rows: per row `samples` draws of the power law x^exponent on {1, ..., threads}."""
    samples: tuple[int, ...]
    threads: int
    exponent: float


@dataclass(frozen=True)
class Fig1Settings:
    """Fig. 1: Alg. 3's invocations for one eps-DP mechanism (eps, eps'), up to mean `max_mean`."""
    eps: float
    eps_prime: float
    max_mean: float


@dataclass(frozen=True)
class DPSGDGrid:
    """Table 3's DP-SGD candidates: every combination of these values."""
    eps: tuple[float, ...]
    learning_rate: tuple[float, ...]
    epochs: tuple[int, ...]
    batch_size: tuple[int, ...]
    clip: tuple[float, ...]

    @classmethod
    def from_config(cls, grid: dict) -> "DPSGDGrid":
        return cls(*(tuple(grid[key]) for key in ("eps", "learning_rate", "epochs", "batch_size", "clip")))


@dataclass(frozen=True)
class DoublingTuning:
    """Table 3's doubling: Papernot-Steinke tuning (eta, E[K] = mean_runs) at each budget in turn."""
    budgets: tuple[float, ...]
    eta: float
    mean_runs: float


@dataclass(frozen=True)
class BrownianRelease:
    """Table 3's Brownian method: releases at ex-post epsilons `eps`, AboveThreshold at `above_threshold_eps`;
    `ridge` (Twitter's regression) and `gamma` (bolt-on PSGD's regularisation) shape the released statistic."""
    eps: tuple[float, ...]
    above_threshold_eps: float
    ridge: float
    gamma: float


@dataclass(frozen=True)
class Table3Settings:
    """The config's `expost.table3`."""
    datasets: tuple[str, ...]
    trials: int
    thresholds: Mapping[str, float]   # the utility bar of each dataset
    twitter_target_bound: float
    grid: DPSGDGrid
    eps_prime: float
    alpha: float
    max_attempts: int
    doubling: DoublingTuning
    brownian: BrownianRelease
    mnist_model: str = "mlp2"

    @classmethod
    def from_config(cls, t3: dict) -> "Table3Settings":
        d, b = t3["doubling"], t3["brownian"]
        return cls(tuple(t3["datasets"]), t3["trials"], dict(t3["thresholds"]), t3["twitter_target_bound"],
                   DPSGDGrid.from_config(t3["grid"]), t3["eps_prime"], t3["alpha"], t3["max_attempts"],
                   DoublingTuning(tuple(d["budgets"]), d["eta"], d["mean_runs"]),
                   BrownianRelease(tuple(b["eps"]), b["above_threshold_eps"], b["ridge"], b["gamma"]),
                   t3.get("mnist_model", cls.mnist_model))


@dataclass(frozen=True)
class ExpostSettings:
    """The config's `expost` section (paper 004). Numbers keep the type the config gives them, so the
    tables' notes print them as written."""
    budget: float
    delta: float
    grid: LevelGrid
    accept_sigma: str            # a key of threads.ACCEPT_SIGMAS
    thread_order: ThreadOrder
    trials: int                  # Tables 1-2's trials per row
    synthetic: SyntheticThreads
    fig1: Fig1Settings
    table1: Table1
    table2: Table2
    table3: Table3Settings

    @classmethod
    def from_config(cls, expost: dict) -> "ExpostSettings":
        accept_sigma = expost.get("accept_sigma", "laplace_scale")
        if accept_sigma not in ACCEPT_SIGMAS:
            raise UserError(f"expost.accept_sigma is {accept_sigma!r}; use one of {', '.join(ACCEPT_SIGMAS)}.")
        order = expost["thread_order"]
        if order not in THREAD_ORDERS:
            raise UserError(f"expost.thread_order is {order!r}; use one of {', '.join(THREAD_ORDERS)}.")
        s = expost["synthetic"]
        return cls(expost["budget"], expost["delta"], LevelGrid(expost["grid"]["start"], expost["grid"]["ratio"]),
                   accept_sigma, THREAD_ORDERS[order], expost["trials"],
                   SyntheticThreads(tuple(s["samples"]), s["threads"], s["exponent"]), Fig1Settings(**expost["fig1"]),
                   Table1.from_config(expost["table1"]), Table2.from_config(expost["table2"]),
                   Table3Settings.from_config(expost["table3"]))

    @property
    def setting(self) -> Setting:
        """What every method of Tables 1-2 shares."""
        return Setting(float(self.budget), float(self.delta), geometric_grid(self.grid.start, self.grid.ratio, self.budget),
                       ACCEPT_SIGMAS[self.accept_sigma])

    def thread_table(self, name: str) -> ThreadTable:
        """Table 1 or 2 by its name ("table1", "table2")."""
        tables = {table.name: table for table in (self.table1, self.table2)}
        if name not in tables:
            raise UserError(f"Paper 004 has no thread table {name!r}; use one of {', '.join(tables)}.")
        return tables[name]
