"""Traces: one training, its whole path. A DP-SGD training of E epochs passes through every shorter
training on its way (the same draws in the same order, a constant learning rate), so the model
after e epochs *is* the output of DP-SGD run for e epochs, with the accountant's epsilon for e
epochs. An oracle that declares a trace axis (`Oracle.trace_axis`, e.g. "epochs") returns the
utilities at every checkpoint of that axis from one training (`Oracle.utilities_trace`), and every
checkpoint becomes an evaluation row of its own (`problems.evaluate`).

Checkpoints: every value of the axis up to `every_until` (64), and beyond it `log_spaced` (32)
values spaced evenly in log between it and the training's end, which is always one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import UserError


@dataclass(frozen=True)
class TraceSettings:
    every_until: int = 64    # every epoch (axis value) up to this one is a checkpoint
    log_spaced: int = 32     # beyond it, this many log-spaced checkpoints up to the training's end

    @classmethod
    def from_config(cls, dpareto: dict) -> "TraceSettings | None":
        """The config's trace settings (`dpareto.traces`, `dpareto.trace_checkpoints`), None when traces are off."""
        if not dpareto.get("traces", False):
            return None
        checkpoints = dpareto.get("trace_checkpoints") or {}
        return cls(int(checkpoints.get("every_until", cls.every_until)), int(checkpoints.get("log_spaced", cls.log_spaced)))

    def checkpoints(self, end: int, low: int = 1) -> list[int]:
        """The axis values recorded by a training that ends at `end`: increasing, from `low` (the
        axis' smallest valid value), the last `end`."""
        end, low = int(end), max(1, int(low))
        if end < low:
            raise UserError(f"A trace cannot end at {end}, below its axis' smallest value {low}; raise it.")
        values = set(range(low, min(end, self.every_until) + 1))
        if end > self.every_until:
            start = max(self.every_until, low)
            values |= {int(v) for v in np.round(np.geomspace(start, end, self.log_spaced + 1))}
        values.add(end)
        return sorted(v for v in values if low <= v <= end)


@dataclass(frozen=True)
class Continuation:
    """A traced training to continue (`problems.evaluate`): its index and seed, which its new rows keep, the
    axis value it reached, its replications, and its state after that (None: it is replayed from its seed,
    every epoch paid again)."""
    index: int
    seed: int
    reached: int
    repeats: int
    state: bytes | None = None
