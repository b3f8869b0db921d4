"""A pure epsilon-DP classifier in the pipeline's environment (the nearest-centroid model beside it),
with every release method: its privacy parameter is its own `eps`, set by `calibrate`."""
from __future__ import annotations

import numpy as np
from centroid_model import accuracy, train

from dptradeoff.privacy.events import EpsilonDpEvent


class PureCentroid:
    neighbouring = "replace-one"

    def epsilon(self, point, *, n, delta):
        return float(point["eps"])

    def utility(self, point, data, rng):
        return self.score(self.train(point, data, rng), data)

    def event(self, point, *, n):
        return EpsilonDpEvent(float(point["eps"]))

    def calibrate(self, point, *, n, epsilon, delta):
        return {**point, "eps": epsilon}

    def train(self, point, data, rng):
        return train(data.x_train, data.y_train, point["eps"], point["clip"], np.abs(data.x_train).sum(axis=1), rng)

    def score(self, model, data):
        return accuracy(model, data.x_test, data.y_test)


class OverCalibrating(PureCentroid):
    """A calibrate() that returns twice the epsilon asked for: the release must refuse it."""

    def calibrate(self, point, *, n, epsilon, delta):
        return {**point, "eps": 2 * epsilon}


class Unanalysable(PureCentroid):
    """A training event the accountant has no RDP analysis of (SVT), found at config time."""

    def event(self, point, *, n):
        from dptradeoff.privacy.events import SparseVectorDpEvent

        return SparseVectorDpEvent(3, 10.0)
