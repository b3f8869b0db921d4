"""IBM diffprivlib's LogisticRegression (pure epsilon-DP: Chaudhuri et al. 2011's objective perturbation
through diffprivlib's vector mechanism) on the pipeline's Adult data, as a problem of your own.

diffprivlib 0.6.6 needs numpy >= 2, so this oracle runs in its own environment
(config/examples/diffprivlib-logreg.yaml: environment: examples/diffprivlib-requirements.txt). Its own
hyperparameter `epsilon` is searched as `eps` (`epsilon` is a result column of the evaluation rows).
It defines what a release needs: the training's event (pure epsilon), `calibrate` (the release sets
`eps` itself), `train`, `score` and `weights`."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np


class DiffprivlibLogisticRegression:
    # Chaudhuri et al.'s guarantee is for datasets that differ in one record's value (replace-one).
    neighbouring = "replace-one (diffprivlib's objective perturbation, Chaudhuri et al. 2011)"

    def prepare(self, data):
        """Rows scaled to L2 norm <= 1, so that data_norm = 1 is a bound diffprivlib can rely on
        (without it, diffprivlib reads the norm from the data: a leak it warns about)."""
        def clipped(x):
            norms = np.linalg.norm(x, axis=1, keepdims=True)
            return x / np.maximum(norms, 1.0)
        return replace(data, x_train=clipped(data.x_train), x_test=clipped(data.x_test))

    def epsilon(self, point, *, n, delta):
        return float(point["eps"])

    def utility(self, point, data, rng):
        return self.score(self.train(point, data, rng), data)

    def trivial_utility(self, data):
        """The majority class's test accuracy: front-quality metrics count only errors below it."""
        labels, counts = np.unique(data.y_train, return_counts=True)
        return float(np.mean(data.y_test == labels[np.argmax(counts)]))

    def event(self, point, *, n):
        return {"event": "EpsilonDpEvent", "epsilon": float(point["eps"])}

    def calibrate(self, point, *, n, epsilon, delta):
        return {**point, "eps": float(epsilon)}

    def train(self, point, data, rng):
        from diffprivlib.models import LogisticRegression

        model = LogisticRegression(epsilon=float(point["eps"]), data_norm=1.0, C=float(point["C"]), max_iter=200,
                                   random_state=int(rng.integers(2**31 - 1)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # sklearn's convergence warnings, one per training
            return model.fit(data.x_train, data.y_train)

    def score(self, model, data):
        return float(np.mean(model.predict(data.x_test) == data.y_test))

    def weights(self, model):
        return {"coef": model.coef_, "intercept": model.intercept_}
