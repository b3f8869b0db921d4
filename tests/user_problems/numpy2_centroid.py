"""A pure epsilon-DP classifier that needs numpy >= 2 (through the package `needs_numpy2`, a wheel the
tests build): the case of a library that cannot live beside the pipeline's pins. It runs in the
problem's own environment (`problems.<name>.environment`), with every release method, and imports
its model from a module beside it."""
from __future__ import annotations

import needs_numpy2          # raises ImportError under numpy < 2
import numpy as np
from centroid_model import accuracy, losses, train


class NumpyTwoCentroid:
    neighbouring = "replace-one"

    def epsilon(self, point, *, n, delta):
        return float(point["eps"])

    def utility(self, point, data, rng):
        return self.score(self.train(point, data, rng), data)

    def trivial_utility(self, data):
        share = float(np.mean(data.y_train))
        return float(np.mean(data.y_test == (1 if share >= 0.5 else 0)))

    def event(self, point, *, n):
        return {"event": "EpsilonDpEvent", "epsilon": float(point["eps"])}

    def calibrate(self, point, *, n, epsilon, delta):
        return {**point, "eps": epsilon}

    def train(self, point, data, rng):
        norms = needs_numpy2.l1_norms(data.x_train)
        return train(data.x_train, data.y_train, point["eps"], point["clip"], norms, rng)

    def score(self, model, data):
        return accuracy(model, data.x_test, data.y_test)

    def losses(self, model, data):
        return losses(model, data.x_test, data.y_test)

    def weights(self, model):
        return {"centroids": model}
