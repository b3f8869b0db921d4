"""A built-in trainer used as an oracle of your own (`oracle: dptradeoff.problems.builtin:LinearDPSGD`), as the
walk-through of docs/your-algorithm.md does on a CSV: the same epsilon as the built-in problem under the
config's RDP conversion, and the same traced trainings, epoch by epoch."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data
from dptradeoff.problems.traces import TraceSettings

ENTRY = {"oracle": "dptradeoff.problems.builtin:LinearDPSGD", "options": {"optimizer": "sgd", "loss": "logistic"},
         "domain": {"epochs": {"low": 1, "high": 64, "integer": True}, "lot_size": {"low": 8, "high": 512, "integer": True},
                    "learning_rate": {"low": 0.0005, "high": 0.05, "log": True},
                    "noise": {"low": 0.1, "high": 16, "log": True}, "clip": {"low": 0.1, "high": 4, "log": True}}}
POINT = {"epochs": 4, "lot_size": 40, "learning_rate": 0.01, "noise": 1.5, "clip": 1.0}


@pytest.mark.parametrize("conversion", ["dp_accounting", "classic"])
def test_its_epsilon_is_the_built_in_problems_under_the_configs_conversion(conversion):
    mine, builtin = resolve("mine", ENTRY, conversion), resolve("adult-logreg-sgd", {}, conversion)
    assert mine.oracle.conversion == builtin.oracle.conversion == conversion
    assert mine.oracle.epsilon(POINT, n=1000, delta=1e-5) == builtin.oracle.epsilon(POINT, n=1000, delta=1e-5)


def test_its_traced_rows_are_the_built_in_problems_trainings():
    rng = np.random.default_rng(4)
    x, x_test = rng.random((400, 5)).astype(np.float32), rng.random((100, 5)).astype(np.float32)
    data = Data(x, (x[:, 0] > 0.5).astype(int), x_test, (x_test[:, 0] > 0.5).astype(int), "file", "test rows")
    # named as the built-in problem, so that both trainings draw from the same seeds
    mine, builtin = resolve("adult-logreg-sgd", ENTRY), resolve("adult-logreg-sgd")
    rows = evaluate(mine, pd.DataFrame([POINT]), mine.oracle.prepare(data), 3, 7, "random", 0, 0, TraceSettings())
    reference = evaluate(builtin, pd.DataFrame([POINT]), builtin.oracle.prepare(data), 3, 7, "random", 0, 0,
                         TraceSettings())
    assert rows["failure"].isna().all() and rows["epochs"].tolist() == [1, 2, 3, 4]
    assert rows["utility_runs"].tolist() == reference["utility_runs"].tolist()
    assert rows["epsilon"].tolist() == reference["epsilon"].tolist()
