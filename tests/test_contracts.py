"""Contracts of the declared extension points, one parametrised test per contract (as dp_accounting's
accountant contract tests do): every built-in oracle, every ex-post thread method, every Table 3 task
and every dataset passes the same checks, so a new one is tested by being registered."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dptradeoff.baselines.random_search import sample
from dptradeoff.data.build import SPLIT_OUTPUTS
from dptradeoff.data.catalog import CATALOG
from dptradeoff.data.dataset import Dataset, DatasetSettings
from dptradeoff.expost import threads
from dptradeoff.expost.baselines import geometric_grid
from dptradeoff.expost.ml_tasks import TASKS, Table3Task, TaskData
from dptradeoff.problems import PROBLEMS, Data, Oracle

# --- oracles ---------------------------------------------------------------------------------------

FEATURES = {"adult": 123, "mnist": 784}   # the built-in problems' datasets, as results/data stores them
CLASSES = {"adult": 2, "mnist": 10}
TRAINING_ROWS = {"adult": 30956, "mnist": 60000}   # n of the real training splits (a1a.t, MNIST's train)


def tiny_data(dataset: str, rows: int = 48) -> Data:
    rng = np.random.default_rng(0)
    x = rng.random((2 * rows, FEATURES[dataset])).astype(np.float32)
    y = rng.integers(0, CLASSES[dataset], 2 * rows).astype(np.int8)
    return Data(x[:rows], y[:rows], x[rows:], y[rows:], "embedded", f"{dataset}: contract test")


def cheapest(problem, point: dict) -> dict:
    """`point` with the training's size parameters at the bottom of their range (one short epoch)."""
    cheap = dict(point)
    for name in ("epochs", "lot_size"):
        if name in cheap:
            cheap[name] = int(problem.bounds(name)[0])
    return problem.check(cheap)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_oracle_names_and_domain_are_consistent(name):
    problem = PROBLEMS[name]
    assert problem.name == name and isinstance(problem.oracle, Oracle)
    assert len(set(problem.names)) == len(problem.names) > 0
    assert set(problem.samplers) <= set(problem.names)
    for p in problem.domain:
        low, high = problem.bounds(p.name)
        assert low <= p.low <= p.high <= high, p
        assert not p.log or p.low > 0, p
        assert not p.integer or (p.low == int(p.low) and p.high == int(p.high)), p
    assert 0 <= problem.delta < 1 and problem.default_repeats >= 1
    assert problem.dataset is None or problem.dataset in SPLIT_OUTPUTS


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_oracle_epsilon_is_a_finite_nonnegative_float_on_a_domain_sample(name):
    problem = PROBLEMS[name]
    n = TRAINING_ROWS[problem.dataset] if problem.dataset else None
    for point in sample(problem, 5, np.random.default_rng(1)).to_dict("records"):
        eps = problem.oracle.epsilon(problem.check(point), n=n, delta=problem.delta)
        assert isinstance(eps, float) and math.isfinite(eps) and eps >= 0, (point, eps)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_oracle_utilities_lie_in_zero_one_on_tiny_data(name):
    problem = PROBLEMS[name]
    data = problem.oracle.prepare(tiny_data(problem.dataset)) if problem.dataset else None
    point = cheapest(problem, sample(problem, 1, np.random.default_rng(2)).to_dict("records")[0])
    utilities = np.asarray(problem.oracle.utilities(point, data, 2, np.random.default_rng(3)), dtype=float)
    assert utilities.shape == (2,) and np.all((utilities >= 0) & (utilities <= 1)), utilities
    if problem.oracle.trains_batches:
        (batch,) = problem.oracle.utilities_of_batch([point], data, 2, np.random.default_rng(3))
        assert np.asarray(batch).shape == (2,)


# --- ex-post thread methods ------------------------------------------------------------------------

TABLE_CONFIGS = {"table1": {"eps_prime": 0.001, "expected_runs": 1.0},
                 "table2": {"eps_prime": 0.01, "expected_runs": 0.3, "alpha": 32, "window": 2}}
THREAD_METHODS = [(name, method) for name, table in threads.TABLES.items() for method in table.available]


def thread_setting(budget: float = 3.0) -> threads.Setting:
    return threads.Setting(budget, 1e-6, geometric_grid(0.001, math.sqrt(2), budget))


@pytest.mark.parametrize("table_name, method_class", THREAD_METHODS, ids=[f"{t}-{m.name}" for t, m in THREAD_METHODS])
def test_thread_method_contract(table_name, method_class):
    """Declared as a ThreadMethod with a name its table lists once; built from its table's settings; labels
    its guarantee; a run on a few threads stays within the threads, charges no more than it admitted, is
    reproducible from its seed and leaves the counts alone."""
    table = threads.TABLES[table_name].from_config(TABLE_CONFIGS[table_name])
    assert issubclass(method_class, threads.ThreadMethod)
    assert isinstance(method_class.name, str) and method_class.name
    assert [m.name for m in table.available].count(method_class.name) == 1
    method = method_class.from_table(table)
    assert isinstance(method, method_class)
    s = thread_setting()
    label = method.guarantee(s)
    assert isinstance(label, str) and (label.startswith("NONE") or label.startswith(("3-DP", "(3, 1e-06)-DP"))), label
    counts = np.array([5000, 2000, 900, 400, 120, 30, 7])
    before = counts.copy()
    out = method.run(counts, s, np.random.default_rng(0))
    assert isinstance(out, threads.Outcome)
    assert 0 <= out.correct <= out.answers <= len(counts)
    assert all(0 <= realised <= worst * (1 + 1e-12) for realised, worst in out.charges)
    assert math.isnan(out.precision) if out.answers == 0 else 0 <= out.precision <= 1
    assert method.run(counts, s, np.random.default_rng(0)) == out
    np.testing.assert_array_equal(counts, before)


# --- Table 3 tasks ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(TASKS))
def test_table3_task_contract(name):
    """A task names its dataset, offers a default model, prepares rows it can release a statistic of, and
    scores utilities so that meeting the bar is scoring at least the bar's score."""
    task = TASKS[name]
    assert isinstance(task, Table3Task) and task.name == name and task.models
    assert len({m.name for m in task.models}) == len(task.models)
    rng = np.random.default_rng(0)
    d = {"twitter": 5, "gisette": 6, "mnist": 784}[name]
    x, y = rng.random((40, d)), (rng.random(40) * 10 if name == "twitter" else rng.integers(0, 2 if name == "gisette" else 10, 40))
    prepared = task.prepare(x[:30], y[:30], x[30:], y[30:], 10.0)
    data = TaskData(task, *(np.asarray(a, dtype=float) for a in prepared), threshold=0.5)
    assert data.model is task.models[0]
    theta, sensitivity = task.statistic(data, 1e-3, rng)
    assert np.all(np.isfinite(theta)) and sensitivity > 0
    for train in (True, False):
        assert 0 <= task.released_utility(data, theta, 1e-3, train) <= 1
    for utility in (0.2, 0.5, 0.8):
        assert data.meets(utility) == (data.score(utility) >= data.score(0.5))


# --- datasets --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CATALOG))
def test_dataset_contract(name):
    """A dataset names its outputs, says what its embedded source is, and reads no file when embedded
    but its wheel."""
    dataset = CATALOG[name]
    assert isinstance(dataset, Dataset) and dataset.name == name and dataset.outputs
    embedded = DatasetSettings("embedded")
    assert dataset.label(embedded).startswith(f"{name}: embedded: ")
    assert dataset.raw_inputs(embedded) == ([f"resources/embedded/{dataset.embedded_wheel}"] if dataset.embedded_wheel else [])
    real = DatasetSettings("real")
    assert dataset.raw_inputs(real) and dataset.label(real).startswith(f"{name}: real data")
