"""Which rows of a dataset a problem sees, for a release whose front is characterised on a share of
the training rows (`release.tuning: {split: f}`): the *tuning* rows are given up (no protection),
the *private* rows are what the release trains and validates on. The split is a seeded permutation
of row positions, so it depends on the row count and the seed only, never on the data.

The tuning rows bring their own held-out part (`holdout`), which the tuning study measures utility
on: the dataset's test rows stay untouched until the released model's single test."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import UserError
from .oracle import Data

PARTS = ("tuning", "private")


@dataclass(frozen=True)
class RowSplit:
    fraction: float      # share of the training rows given to tuning
    seed: int
    part: str            # tuning or private
    holdout: float = 0.2  # share of the tuning rows the tuning study measures utility on

    def __post_init__(self):
        if not 0 < self.fraction < 1:
            raise UserError(f"The tuning split must be a fraction in (0, 1), got {self.fraction}; use e.g. 0.2.")
        if not 0 < self.holdout < 1:
            raise UserError(f"The tuning rows' held-out share must be in (0, 1), got {self.holdout}; use e.g. 0.2.")
        if self.part not in PARTS:
            raise UserError(f"A row split's part is tuning or private, got {self.part!r}.")

    @classmethod
    def from_definition(cls, rows: dict) -> "RowSplit":
        return cls(float(rows["fraction"]), int(rows["seed"]), str(rows["part"]), float(rows.get("holdout", 0.2)))

    def definition(self) -> dict:
        return {"fraction": self.fraction, "seed": self.seed, "part": self.part, "holdout": self.holdout}

    def positions(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(tuning, private) row positions of n training rows, each sorted."""
        order = np.random.default_rng(self.seed).permutation(n)
        tuning = int(round(self.fraction * n))
        if not 2 <= tuning <= n - 2:
            raise UserError(f"A tuning split of {self.fraction} of {n} rows leaves a part with fewer than 2 rows; "
                            f"choose a fraction between {2 / n:.3g} and {1 - 2 / n:.3g}.")
        return np.sort(order[:tuning]), np.sort(order[tuning:])

    def select(self, data: Data) -> Data:
        """This part's rows: tuning rows as train and held-out sets, or the private rows with the test rows."""
        tuning, private = self.positions(data.n_train)
        label = f"{data.source_label}; rows: {self.describe(data.n_train)}"
        y = (lambda rows: None) if data.y_train is None else (lambda rows: data.y_train[rows])  # features only: no labels
        if self.part == "private":
            return replace(data, x_train=data.x_train[private], y_train=y(private), source_label=label)
        held = int(round(self.holdout * len(tuning)))
        order = np.random.default_rng([self.seed, 1]).permutation(tuning)
        held_out, trained = np.sort(order[:held]), np.sort(order[held:])
        return replace(data, x_train=data.x_train[trained], y_train=y(trained),
                       x_test=data.x_train[held_out], y_test=y(held_out), source_label=label)

    def describe(self, n: int) -> str:
        tuning, private = self.positions(n)
        if self.part == "tuning":
            return (f"the tuning split, {len(tuning)} of {n} training rows (given up: no protection), "
                    f"{self.holdout:g} of them held out for utility")
        return f"the private rows, {len(private)} of {n} training rows ({len(tuning)} given up to tuning)"
