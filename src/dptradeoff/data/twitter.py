"""Buzz in social media, Twitter regression set: 77 features, the 78th column is the target.

Real: `regression/Twitter/Twitter.data` from UCI's regression.tar.gz (CSV, no header).
Embedded: a synthetic set of the same shape. Both get the usual preprocessing of this task
(Wu et al. 2019, paper 004): x -> log(1 + x), y -> log(1 + y); scaling to norm <= 1 is left to the model.
"""
from __future__ import annotations

import io

import numpy as np
import pandas as pd

from .. import UserError
from .dataset import SplitDataset, seeded_split
from .sources import TWITTER_MEMBER, file_specs

N_FEATURES = 77


def parse(data: bytes, name: str) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(io.BytesIO(data), header=None, dtype=np.float64)
    if frame.shape[1] != N_FEATURES + 1:
        raise UserError(f"{name} has {frame.shape[1]} columns, expected {N_FEATURES + 1}; it is not Twitter.data.")
    values = frame.to_numpy()
    if (values < 0).any():
        raise UserError(f"{name} has negative counts; it is not Twitter.data.")
    return values[:, :N_FEATURES], values[:, N_FEATURES]


def synthetic(rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Heavy-tailed non-negative counts (the real features are tweet/author counts over 7 days,
    11 groups of 7 correlated daily values) and a target driven by a few of them."""
    activity = rng.lognormal(mean=3.0, sigma=1.5, size=(rows, 11))
    daily = activity[:, :, None] * rng.lognormal(0.0, 0.3, size=(rows, 11, 7))
    x = np.floor(daily.reshape(rows, N_FEATURES))
    y = np.floor(0.6 * daily[:, 0, -1] + 0.3 * daily[:, 1, -1] + rng.lognormal(0.0, 1.0, size=rows))
    return x, y


def preprocess(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.log1p(x).astype(np.float32), np.log1p(y).astype(np.float32)


class Twitter(SplitDataset):
    name = "twitter"
    embedded_label = "embedded: synthetic Twitter-like set, not the real Buzz data"

    def raw_inputs(self, settings):
        if settings.real:
            file_specs(self.name, settings.files)   # refuses overrides of files twitter does not have
            return [f"resources/raw/twitter/{TWITTER_MEMBER}"]   # extracted from regression.tar.gz by its own rule
        return []

    def load(self, settings, files, rng):
        if settings.real:
            x, y = parse(files["Twitter.data"].read_bytes(), "Twitter.data")
            origin = "UCI Buzz in social media, regression/Twitter/Twitter.data"
        else:
            x, y = synthetic(settings.synthetic_rows, rng)
            origin = f"embedded: synthetic Twitter-like regression set, {settings.synthetic_rows} rows of 77 heavy-tailed counts"
        total = len(y)
        take = np.sort(rng.permutation(total)[: min(settings.subsample, total)])
        x, y = preprocess(x[take], y[take])
        return (seeded_split(x, y, settings.test_fraction, rng), None, origin,
                {"rows_before_subsample": total, "transform": "x -> log1p(x), y -> log1p(y)"})
