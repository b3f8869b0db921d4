"""The order in which a trial estimates the threads (config `expost.thread_order`)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np


class ThreadOrder(ABC):
    name: ClassVar[str]
    note: ClassVar[str]          # the order as the tables' notes describe it
    condition: ClassVar[str] = ""  # what every guarantee then also needs (an order that reads the counts)

    @abstractmethod
    def order(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The counts in the order a trial estimates them."""


class Given(ThreadOrder):
    name = "given"
    note = ("the histogram's own order (synthetic: thread index, the public law's ranking; Reddit: subreddit name), "
            "which reads no count")

    def order(self, counts, rng):
        return np.asarray(counts)


class Random(ThreadOrder):
    name = "random"
    note = "a seeded random order per trial, which reads no count"

    def order(self, counts, rng):
        counts = np.asarray(counts)
        return counts[rng.permutation(len(counts))]


class ByCount(ThreadOrder):
    """Decreasing true count: reads the private counts and stands for a public ranking (e.g. last
    year's counts)."""
    name = "by_count"
    note = ("decreasing TRUE count, as the paper's numbers need: this order reads the private counts, so every "
            "guarantee holds only if that ranking is public (e.g. from last year's counts) and only for neighbours "
            "that keep it; without such a public ranking these numbers are NOT covered by the stated budget")
    condition = ("; only if the ranking of the threads by count is public, and only for neighbours that keep it "
                 "(thread_order by_count reads the true counts; without such a public ranking these numbers are NOT "
                 "covered by the stated budget)")

    def order(self, counts, rng):
        return np.sort(np.asarray(counts))[::-1]


THREAD_ORDERS: dict[str, ThreadOrder] = {o.name: o for o in (Given(), Random(), ByCount())}
