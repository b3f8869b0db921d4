"""Traces: the point at epoch e of a training is exactly the training of e epochs, with its own epsilon.

Each trainer is trained for E epochs with every epoch recorded and, from the same Generator state,
for e epochs from scratch: the two must agree bit for bit (linear SGD and Adam, the MLP, the CNN).
A trainer whose random stream shifts with the training's length (e.g. replications run one after
the other, or draws made up front for all steps) fails these tests.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import REPO
from dptradeoff.privacy import dpsgd
from dptradeoff.problems import get_problem
from dptradeoff.problems.builtin import LinearDPSGD, MLPDPSGD
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data
from dptradeoff.problems.traces import TraceSettings
from dptradeoff.train import cnn, linear, mlp
from dptradeoff.train.hyper import DPSGDHyper


def _binary_task(n=300, d=12, seed=3):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, d)) < 0.3).astype(np.float64) * rng.normal(1.0, 0.5, (n, d))
    y = np.where(x[:, 0] - x[:, 1] + rng.normal(0, 0.3, n) > 0, 1.0, -1.0)
    return x, y


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_linear_trace_checkpoint_is_the_shorter_training_bit_for_bit(loss, optimizer):
    x, y = _binary_task()
    hp = DPSGDHyper(epochs=7, lot_size=25, learning_rate=0.05, noise=1.1, clip=0.7)
    trace = linear.train_trace(x, y, loss, optimizer, hp, 3, np.random.default_rng(8), list(range(1, 8)))
    assert trace.shape == (7, 3, x.shape[1] + 1)
    for e in (1, 2, 4, 7):
        alone = linear.train_trace(x, y, loss, optimizer, DPSGDHyper(e, 25, 0.05, 1.1, 0.7), 3,
                                   np.random.default_rng(8), [e])[0]
        assert np.array_equal(trace[e - 1], alone), f"epoch {e}"
    assert not np.array_equal(trace[2], trace[3])   # the checkpoints are distinct states


def test_linear_trace_of_one_replication_equals_the_plain_trainer():
    """With R = 1 the plain trainer's draws come in the same order: its e-epoch training is the checkpoint."""
    x, y = _binary_task()
    trace = linear.train_trace(x, y, "logistic", "adam", DPSGDHyper(5, 30, 0.02, 0.9, 1.0), 1,
                               np.random.default_rng(2), [2, 5])
    for k, e in enumerate((2, 5)):
        plain = linear.train(x, y, "logistic", "adam", DPSGDHyper(e, 30, 0.02, 0.9, 1.0), 1, np.random.default_rng(2))
        assert np.array_equal(trace[k], plain)


def test_linear_trace_replications_are_algorithm_3_with_their_own_lots_and_noise():
    """The traced kernel (replications stepping together) is still Alg. 3/4 fed the lots and noise it drew."""
    from test_trainers import _reference_alg

    x, y = _binary_task(n=60, d=5)
    hp = DPSGDHyper(epochs=3, lot_size=7, learning_rate=0.1, noise=0.8, clip=0.5)
    steps = hp.steps(60)
    w, lots, noise = linear._train(x, y, "logistic", "adam", hp, 2, np.random.default_rng(4), record=True,
                                   checkpoints=np.array([steps]))
    np.testing.assert_allclose(w[0], _reference_alg(x, y, "logistic", "adam", hp, lots, noise), rtol=1e-10, atol=1e-12)
    assert not np.array_equal(lots[0], lots[1])


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mlp_trace_checkpoint_is_the_shorter_training_bit_for_bit(optimizer):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 120)
    x = rng.random((120, 784)).astype(np.float32)
    seen = {}
    hp = DPSGDHyper(epochs=4, lot_size=30, learning_rate=0.05, noise=0.7, clip=1.0)
    mlp.train(x, y, "mlp2", optimizer, hp, 9, checkpoint=lambda e, params: seen.update({e: [p.clone() for p in params]}))
    assert sorted(seen) == [1, 2, 3, 4]
    for e in (1, 3, 4):
        alone = mlp.train(x, y, "mlp2", optimizer, DPSGDHyper(e, 30, 0.05, 0.7, 1.0), 9)
        assert all(torch.equal(p, q) for p, q in zip(seen[e], alone)), f"epoch {e}"


def test_cnn_trace_checkpoint_is_the_shorter_training_bit_for_bit():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 10, 40)
    x = rng.random((40, 784)).astype(np.float32)
    seen = {}
    hp = DPSGDHyper(epochs=3, lot_size=20, learning_rate=0.05, noise=0.7, clip=1.0)
    cnn.train(x, y, hp, 4, checkpoint=lambda e, model: seen.update({e: {k: v.clone() for k, v in model.state_dict().items()}}))
    assert sorted(seen) == [1, 2, 3]
    for e in (1, 2):
        alone = cnn.train(x, y, DPSGDHyper(e, 20, 0.05, 0.7, 1.0), 4).state_dict()
        assert all(torch.equal(seen[e][k], alone[k]) for k in alone), f"epoch {e}"


def _data(n=400, seed=5):
    x, y = _binary_task(n=n, seed=seed)
    x2, y2 = _binary_task(n=200, seed=seed + 1)
    return Data(x, (y > 0).astype(float), x2, (y2 > 0).astype(float), "test", "test data")


@pytest.mark.parametrize("name", ["adult-logreg-sgd", "adult-logreg-adam"])
def test_trace_rows_are_the_trainings_of_their_epochs_with_their_own_epsilon(name):
    """Each row of a traced evaluation: utilities equal to the oracle's trace of that many epochs alone,
    epsilon equal to dpsgd.epsilon at that many epochs, the costs summing to the training's."""
    problem = get_problem(name)
    data = problem.oracle.prepare(_data())
    point = {"epochs": 6, "lot_size": 40, "learning_rate": 0.01, "noise": 1.5, "clip": 1.0}
    rows = evaluate(problem, pd.DataFrame([point]), data, 3, 7, "random", 0, 0, TraceSettings())
    assert rows["epochs"].tolist() == [1, 2, 3, 4, 5, 6]
    assert rows["trace_final"].tolist() == [False] * 5 + [True]
    assert (rows["index"] == 0).all() and rows["seed"].nunique() == 1
    assert rows["cost_epochs"].sum() == 6 and rows["cost_examples"].sum() == 6 * 400 * 3
    for _, row in rows.iterrows():
        e = int(row["epochs"])
        assert row["epsilon"] == dpsgd.epsilon(400, 40, e, 1.5, problem.delta, "pld")
        alone = evaluate(problem, pd.DataFrame([{**point, "epochs": e}]), data, 3, 7, "random", 0, 0, TraceSettings())
        assert alone["utility_runs"].iloc[-1] == row["utility_runs"]
    plain = evaluate(problem, pd.DataFrame([point]), data, 3, 7, "random", 0, 0)
    assert len(plain) == 1 and plain["trace_final"].all() and plain["cost_epochs"].iloc[0] == 6


def test_mlp_trace_rows_equal_plain_evaluations_of_their_epochs():
    """The MLP's replications are trained as one batch from their seeds: a trace row is the untraced evaluation
    at its epochs."""
    rng = np.random.default_rng(0)
    y, y2 = rng.integers(0, 10, 100), rng.integers(0, 10, 50)
    data = Data(rng.random((100, 784)).astype(np.float32), y, rng.random((50, 784)).astype(np.float32), y2, "t", "t")
    problem = get_problem("mnist-mlp2-sgd")
    point = {"epochs": 3, "lot_size": 25, "learning_rate": 0.05, "noise": 1.0, "clip": 1.0}
    rows = evaluate(problem, pd.DataFrame([point]), data, 2, 3, "random", 0, 0, TraceSettings())
    for _, row in rows.iterrows():
        plain = evaluate(problem, pd.DataFrame([{**point, "epochs": int(row["epochs"])}]), data, 2, 3, "random", 0, 0)
        assert plain["utility_runs"].iloc[0] == row["utility_runs"]
        assert plain["epsilon"].iloc[0] == row["epsilon"]


def test_checkpoints_every_epoch_then_log_spaced():
    settings = TraceSettings()
    assert settings.checkpoints(16) == list(range(1, 17))
    assert settings.checkpoints(16, low=4) == list(range(4, 17))
    long = settings.checkpoints(400)
    assert long[:64] == list(range(1, 65)) and long[-1] == 400
    assert len(long) - 64 >= 32 - 1 and long == sorted(set(long))   # 32 log-spaced values from 64 to 400
    assert TraceSettings(every_until=4, log_spaced=3).checkpoints(32) == [1, 2, 3, 4, 8, 16, 32]


def test_oracles_with_a_trace_axis():
    assert LinearDPSGD("sgd").trace_axis == "epochs" and MLPDPSGD("sgd").trace_axis == "epochs"
    assert get_problem("svt").oracle.trace_axis is None


def _user_problem(oracle="NoisyMeanSteps"):
    from dptradeoff.problems.user import user_problem

    return user_problem("noisy-steps", {
        "oracle": str(REPO / "tests/user_problems/noisy_mean_steps.py") + f":{oracle}",
        "domain": {"steps": {"low": 1, "high": 12, "integer": True}, "rate": {"low": 0.1, "high": 1.0},
                   "sigma": {"low": 0.001, "high": 0.1, "log": True}}})


def test_a_user_oracle_opts_in_with_utility_trace():
    problem = _user_problem()
    assert problem.oracle.trace_axis == "steps"
    point = {"steps": 5, "rate": 0.5, "sigma": 0.01}
    rows = evaluate(problem, pd.DataFrame([point]), None, 2, 3, "random", 0, 0, TraceSettings())
    assert rows["steps"].tolist() == [1, 2, 3, 4, 5] and rows["trace_final"].tolist()[-1]
    assert rows["cost_epochs"].tolist() == [1.0] * 5
    for _, row in rows.iterrows():
        assert row["epsilon"] == problem.oracle.epsilon({**point, "steps": int(row["steps"])}, n=None, delta=1e-5)
    # without traces: one row, the point's own
    assert len(evaluate(problem, pd.DataFrame([point]), None, 2, 3, "random", 0, 0)) == 1


def test_a_trace_axis_that_is_not_an_integer_parameter_is_refused_at_config_time():
    from dptradeoff import UserError

    with pytest.raises(UserError, match="trace_axis = 'rate', which is not an integer parameter"):
        _user_problem("WrongAxis")


@pytest.mark.slow   # Opacus trains the Basic MNIST CNN five times: about 12 s
def test_the_opacus_example_traces_every_epoch_as_its_shorter_training():
    """The Opacus CNN example's `utility_trace`: epoch e's accuracy is that of a training of e epochs."""
    import sys

    sys.path.insert(0, str(REPO / "examples"))
    from opacus_cnn import OpacusCNN

    rng = np.random.default_rng(0)
    raw = Data(rng.random((60, 784)).astype(np.float32), rng.integers(0, 10, 60),
               rng.random((40, 784)).astype(np.float32), rng.integers(0, 10, 40), "t", "t")
    oracle = OpacusCNN()
    data = oracle.prepare(raw)
    point = {"epochs": 3, "lot_size": 20, "learning_rate": 0.5, "noise": 0.5, "clip": 1.0}
    trace = oracle.utility_trace(point, data, np.random.default_rng(4))
    assert sorted(trace) == [1, 2, 3] and len(set(trace.values())) > 1
    for e in (1, 2, 3):
        assert oracle.utility({**point, "epochs": e}, data, np.random.default_rng(4)) == trace[e], e


def test_the_gps_see_every_training_then_front_trace_rows_in_a_fixed_order():
    from dptradeoff.bo.propose import gp_rows, nondominated

    rng = np.random.default_rng(0)
    rows = []
    for index in range(40):
        end = int(rng.integers(1, 12))
        for e in range(1, end + 1):
            rows.append({"index": index, "epochs": e, "epsilon": rng.random() * e, "error": rng.random(),
                         "trace_final": e == end})
    evals = pd.DataFrame(rows)
    kept = gp_rows(evals, 100)
    assert len(kept) == 100 and kept["trace_final"].sum() == evals["trace_final"].sum()
    front = nondominated(evals["epsilon"].to_numpy(), evals["error"].to_numpy())
    assert set(evals.index[front & ~evals["trace_final"]]) <= set(kept.index)   # the front's trace rows first
    brute = [not ((evals["epsilon"] <= r.epsilon) & (evals["error"] <= r.error)
                  & ((evals["epsilon"] < r.epsilon) | (evals["error"] < r.error))).any() for r in evals.itertuples()]
    assert front.tolist() == brute
    # one more training changes the selection little: the next round's ML-II starts from nearly the same rows
    more = pd.concat([evals, pd.DataFrame([{"index": 40, "epochs": 1, "epsilon": 5.0, "error": 0.9,
                                            "trace_final": True}])], ignore_index=True)
    assert len(set(gp_rows(more, 100).index) & set(kept.index)) >= 98
    assert gp_rows(evals, 1000) is evals


def test_a_trace_axis_the_domain_does_not_search_means_no_traces():
    from dptradeoff.problems.user import user_problem

    problem = user_problem("fixed-steps", {
        "oracle": str(REPO / "tests/user_problems/noisy_mean_steps.py") + ":NoisyMeanSteps",
        "domain": {"rate": {"low": 0.1, "high": 1.0}, "sigma": {"low": 0.001, "high": 0.1, "log": True}}})
    assert problem.oracle.trace_axis is None


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_batched_mlp_trace_checkpoints_are_the_shorter_batch_bit_for_bit(optimizer):
    """Three networks with their own rates and noises stepped together: each checkpoint is the batch of that
    many epochs, every network bit for bit; the same seeds give the same batch."""
    from dptradeoff.train.batch import Batch

    rng = np.random.default_rng(2)
    y = rng.integers(0, 10, 90)
    x = rng.random((90, 784)).astype(np.float32)

    def batch(epochs):
        return Batch(tuple(DPSGDHyper(epochs, 30, lr, z, 1.0) for lr, z in ((0.05, 0.7), (0.02, 1.1), (0.1, 0.4))),
                     (9, 10, 11))

    seen = {}
    final = mlp.train_batch(x, y, "mlp2", optimizer, batch(3),
                            checkpoint=lambda e, params: seen.update({e: [p.clone() for p in params]}))
    assert all(torch.equal(p, q) for p, q in zip(final, mlp.train_batch(x, y, "mlp2", optimizer, batch(3))))
    for e in (1, 2):
        alone = mlp.train_batch(x, y, "mlp2", optimizer, batch(e))
        assert all(torch.equal(p, q) for p, q in zip(seen[e], alone)), f"epoch {e}"
