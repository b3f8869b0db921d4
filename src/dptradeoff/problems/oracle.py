"""The interface every problem's oracles implement, built-in or brought by a user.

A problem's *privacy oracle* is epsilon at the problem's delta for a point (a dict of
hyperparameters); its *utility oracle* is the utilities (accuracy, F1, ...: higher is better, in
[0, 1]) of R independent replications of training at that point on the problem's data. An oracle
is an object (an instance of a class, or a module) with

    epsilon(point, *, n, delta) -> float        n: training rows after `prepare`, or None
    utility(point, data, rng) -> float           one replication; rng: numpy Generator

or, instead of `utility`, `utilities(point, data, repeats, rng) -> array of `repeats``. It may
define `prepare(data) -> Data` (labels or features as its model needs them, a subsample: the n its
epsilon sees is that of the prepared data). An iterative algorithm whose training of E epochs passes
through every shorter training may declare `trace_axis` (an integer parameter, e.g. "epochs") and
`utility_trace(point, data, rng) -> {axis value: utility}` (or `utilities_trace`): the utilities
after each recorded value up to point[trace_axis], from one training (`problems.traces`). An oracle whose
noise comes from a generator of its own, not from `rng`, sets `seedable = False`. `Oracle` below supplies the
defaults; subclassing it is optional.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass
class Data:
    """A dataset's train/test matrices (labels as stored: 0/1 for binary tasks, digits for MNIST; None for a
    file of your own without a label column)."""
    x_train: np.ndarray
    y_train: np.ndarray | None
    x_test: np.ndarray
    y_test: np.ndarray | None
    source: str
    source_label: str

    @property
    def n_train(self) -> int:
        return len(self.y_train) if self.y_train is not None else len(self.x_train)


class Oracle(ABC):
    """Defaults for an oracle; a subclass defines `epsilon` and `utility` (or `utilities`)."""

    # The name of the RDP -> (epsilon, delta) conversion of its accountant, for oracles whose epsilon
    # is converted from RDP (`privacy.conversion`); every evaluation row records it.
    conversion: str | None = None
    # The neighbouring relation epsilon is stated for (replace-one or add/remove-one: replace-one
    # epsilons are about twice as large for the same noise); every evaluation row records it.
    neighbouring: str = "not stated"
    # The points of one job are trained together from one Generator (see `utilities_of_batch`).
    trains_batches = False
    # What a problem without a dataset trains on, for the rows' data_source (figure footers).
    own_data = "none: the oracle's own data"
    # Trains with torch, so a GPU helps: with `cluster.gpu: true` its evaluation jobs ask for one.
    uses_gpu = False
    # May be called from several threads at once (a local run evaluates chain points as threads of the
    # Snakemake process: dptradeoff.bo.chain_round); the built-in oracles keep no shared state.
    thread_safe = True
    # The integer parameter along which one training passes through every shorter training (its
    # utilities at every checkpoint from `utilities_trace`), or None: no traces.
    trace_axis: str | None = None
    # Every random draw of the utility oracle comes from the `rng` it is handed, so a row replays bit for bit
    # from its seed. False: it draws noise from a generator of its own that `rng` cannot seed (OpenDP's
    # samplers, diffprivlib's secure mode): its rows replay in distribution, not bit for bit. Every
    # evaluation row records it (`seedable`, and `replay` in the file's provenance).
    seedable = True
    # A traced training that can stop and continue later from its state (`utilities_segment`), paying only
    # for the epochs it adds. Without it, a training is continued by replaying it from its seed: the same
    # rows, but every epoch is paid again (docs/traces.md).
    resumable = False

    def cost_seconds(self, point: dict, n: int | None) -> float | None:
        """Estimated wall seconds of one utility replication at `point` (n training rows) on one CPU
        core: what a cluster job asks for (dptradeoff.resources). None: unknown, the rule's default."""
        return None

    def prepare(self, data: Data) -> Data:
        return data

    def trivial_utility(self, data: Data | None) -> float | None:
        """The utility of a predictor that ignores the data (e.g. the majority class's accuracy on the
        test set): front-quality metrics count only errors below it. None: unknown (a user problem then
        states `utility_floor`, else the floor is utility 0)."""
        return None

    def with_accountant(self, accountant) -> "Oracle":
        """This oracle accounting with `accountant` (`privacy.accountant.Accountant`, its RDP conversion
        chosen); oracles whose epsilon has no RDP conversion ignore it."""
        return self

    @abstractmethod
    def epsilon(self, point: dict, *, n: int | None, delta: float) -> float:
        """The privacy oracle: epsilon at `delta` for a training on `n` rows."""

    def utility(self, point: dict, data: Data | None, rng: np.random.Generator) -> float:
        raise NotImplementedError(f"{type(self).__name__} defines neither utility() nor utilities(); define one")

    def utilities(self, point: dict, data: Data | None, repeats: int, rng: np.random.Generator) -> np.ndarray:
        return replicate(self.utility, point, data, repeats, rng)

    def utility_trace(self, point: dict, data: Data | None, rng: np.random.Generator) -> dict:
        raise NotImplementedError(f"{type(self).__name__} declares trace_axis but defines neither utility_trace() nor "
                                  f"utilities_trace(); define one")

    def utilities_trace(self, point: dict, data: Data | None, repeats: int, rng: np.random.Generator,
                        checkpoints: list[int]) -> dict[int, np.ndarray]:
        """The utilities of `repeats` replications at each of `checkpoints` (increasing values of the
        trace axis, the last point[trace_axis]), each replication one training. Checkpoint e's
        utilities are those of trainings that end at e, from the same Generator state."""
        seeds = rng.integers(0, 2**62, size=repeats)
        runs = [_trace_by_value(self.utility_trace(point, data, np.random.default_rng(int(s))), self.trace_axis)
                for s in seeds]
        end = checkpoints[-1]
        if any(end not in run for run in runs):
            raise KeyError(f"utility_trace returned no utility at {self.trace_axis} = {end}, the point's own; it must "
                           f"return the utility at the end of the training")
        # the checkpoints every replication recorded (a user's trace may record fewer than asked)
        return {e: np.array([run[e] for run in runs]) for e in checkpoints if all(e in run for run in runs)}

    def utilities_segment(self, point: dict, data: Data | None, repeats: int, rng: np.random.Generator,
                          checkpoints: list[int], state: bytes | None) -> tuple[dict[int, np.ndarray], bytes]:
        """As `utilities_trace`, continuing the training whose state is `state` (None: a new one from `rng`;
        otherwise `rng` is not used and `checkpoints` lie beyond the state's), and the state after the last
        checkpoint: a training continued from it equals the uninterrupted one bit for bit (only where
        `resumable`)."""
        raise NotImplementedError(f"{type(self).__name__} is not resumable: it defines no utilities_segment()")

    def utilities_of_batch(self, points: list[dict], data: Data | None, repeats: int,
                           rng: np.random.Generator) -> list[np.ndarray]:
        """Every point's replications from one Generator (only where `trains_batches`)."""
        raise NotImplementedError(f"{type(self).__name__} sets trains_batches but defines no utilities_of_batch()")


def _trace_by_value(trace, axis: str) -> dict[int, float]:
    """One replication's trace {axis value: utility}, keys as ints (a user's trace may key them as floats)."""
    if not isinstance(trace, dict):
        raise TypeError(f"utility_trace must return a dict {{{axis}: utility}}, got {type(trace).__name__}")
    return {int(round(float(k))): float(v) for k, v in trace.items() if float(k) == round(float(k))}


def majority_share(data: Data) -> float:
    """The accuracy of always predicting the training set's most common label, on the test set."""
    labels, counts = np.unique(data.y_train, return_counts=True)
    return float(np.mean(data.y_test == labels[np.argmax(counts)]))


def replicate(utility, point: dict, data: Data | None, repeats: int, rng: np.random.Generator) -> np.ndarray:
    """`repeats` independent replications of a one-replication utility, each from its own Generator."""
    seeds = rng.integers(0, 2**62, size=repeats)
    return np.array([float(utility(point, data, np.random.default_rng(int(s)))) for s in seeds])
