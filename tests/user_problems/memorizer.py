"""An algorithm of your own whose claimed epsilon is false: it memorises its training rows (a lookup
table, majority class elsewhere) while its epsilon() claims 0.05 / noise. The audit must say so loudly."""
from __future__ import annotations

import numpy as np

neighbouring = "replace-one"


def _key(row) -> bytes:
    return np.asarray(row, dtype=np.float32).tobytes()


def epsilon(point, *, n, delta):
    return 0.05 / point["noise"]


def train(point, data, rng):
    labels = np.asarray(data.y_train)
    return {"rows": {_key(x): y for x, y in zip(data.x_train, labels)},
            "majority": float(np.bincount(labels.astype(int)).argmax())}


def score(model, data):
    predicted = [model["rows"].get(_key(x), model["majority"]) for x in data.x_test]
    return float(np.mean(np.asarray(predicted) == np.asarray(data.y_test)))


def losses(model, data):
    """0 for a (row, label) the model stored, else 1."""
    return np.array([0.0 if model["rows"].get(_key(x)) == y else 1.0 for x, y in zip(data.x_test, data.y_test)])


def utility(point, data, rng):
    return score(train(point, data, rng), data)
