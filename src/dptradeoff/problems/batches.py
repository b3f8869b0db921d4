"""Batches: a method's points taken `size` at a time, in order. A sampling method's or grid's points
are evaluated one batch per job (`random_sampling.points_per_job`: the job's interpreter start-up
against its work)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Batches:
    """Batch b holds points b * size to (b + 1) * size - 1; the last batch may hold fewer."""
    size: int

    def count(self, points: int) -> int:
        """How many batches hold `points` points."""
        return -(-points // self.size)

    def first(self, batch: int) -> int:
        """The index of the batch's first point."""
        return batch * self.size

    def take(self, points: pd.DataFrame, batch: int) -> pd.DataFrame:
        """The batch's rows of `points`."""
        first = self.first(batch)
        return points.iloc[first:first + self.size]
