"""Trainings that stop and resume: a training continued from its saved state equals the uninterrupted one
bit for bit and costs only the epochs it adds; one continued by replay has the same rows and pays every
epoch; a round values continuations per epoch they add; MOASHA stops trainings at its rungs and continues
the others, its rounds rebuilt from the rows alone."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptradeoff.bo import resume
from dptradeoff.bo.propose import Context, DPareto, Settings
from dptradeoff.io import read_training_states, write_frame
from dptradeoff.privacy import dpsgd
from dptradeoff.problems import get_problem
from dptradeoff.problems.builtin import LinearDPSGD
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data
from dptradeoff.problems.problem import Param, Problem
from dptradeoff.problems.traces import Continuation, TraceSettings
from dptradeoff.stats.cost import in_training_order, spent, trainings
from dptradeoff.train import linear
from dptradeoff.train.hyper import DPSGDHyper
from test_traces import _binary_task


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_a_training_resumed_from_its_saved_state_equals_the_uninterrupted_one(loss, optimizer):
    """Stopped after 3 epochs, its state written to bytes and read back, continued to 7: the weights at
    epochs 4-7 are the uninterrupted training's, bit for bit (lots, noise, Adam's moments, both streams)."""
    x, y = _binary_task()
    hp = DPSGDHyper(epochs=7, lot_size=25, learning_rate=0.05, noise=1.1, clip=0.7)
    whole = linear.train_trace(x, y, loss, optimizer, hp, 3, np.random.default_rng(8), list(range(1, 8)))
    first, state = linear.trace_segment(x, y, loss, optimizer, DPSGDHyper(3, 25, 0.05, 1.1, 0.7), 3,
                                        np.random.default_rng(8), [1, 2, 3])
    saved = linear.TraceState.from_bytes(state.to_bytes())
    assert saved.step == 3 * (len(y) // 25)
    rest, after = linear.trace_segment(x, y, loss, optimizer, hp, 3, np.random.default_rng(12345), [4, 5, 6, 7], saved)
    assert np.array_equal(first, whole[:3]) and np.array_equal(rest, whole[3:])
    # a second stop and resume lands on the same weights too
    again, _ = linear.trace_segment(x, y, loss, optimizer, hp, 3, None, [7],
                                    linear.trace_segment(x, y, loss, optimizer, DPSGDHyper(5, 25, 0.05, 1.1, 0.7), 3,
                                                         None, [5], saved)[1])
    assert np.array_equal(again[0], whole[6])
    assert after.step == 7 * (len(y) // 25)


def test_a_resumed_training_draws_on_from_its_own_streams():
    """Each part of the state matters: the same training resumed with its noise generator, its lot stream or
    its shuffle reset does not give the uninterrupted weights (the test above would catch a state that
    loses any of them)."""
    x, y = _binary_task()
    hp = DPSGDHyper(epochs=4, lot_size=25, learning_rate=0.05, noise=1.1, clip=0.7)
    whole = linear.train_trace(x, y, "logistic", "sgd", hp, 2, np.random.default_rng(1), [4])
    _, state = linear.trace_segment(x, y, "logistic", "sgd", DPSGDHyper(2, 25, 0.05, 1.1, 0.7), 2,
                                    np.random.default_rng(1), [2])
    fresh_generator = {**state.__dict__, "generator": np.random.default_rng(1).bit_generator.state}
    reset_shuffle = {**state.__dict__, "permutation": np.arange(len(y), dtype=np.uint32)}
    for changed in (fresh_generator, reset_shuffle):
        resumed, _ = linear.trace_segment(x, y, "logistic", "sgd", hp, 2, None, [4], linear.TraceState(**changed))
        assert not np.array_equal(resumed[0], whole[0])
    with pytest.raises(ValueError, match="cannot record epochs"):
        linear.trace_segment(x, y, "logistic", "sgd", hp, 2, None, [2, 3], state)


def _linear_problem():
    x, y = _binary_task(n=400)
    data = LinearDPSGD("sgd").prepare(Data(x[:300], (y[:300] + 1) / 2, x[300:], (y[300:] + 1) / 2, "test", "test"))
    problem = Problem("resumable", None, LinearDPSGD("sgd"),
                      (Param("epochs", 1, 9, integer=True), Param("lot_size", 10, 50, integer=True),
                       Param("learning_rate", 0.01, 0.5, log=True), Param("noise", 0.5, 5, log=True),
                       Param("clip", 0.1, 2, log=True)), delta=1e-5)
    return problem, data


def _point(epochs):
    return pd.DataFrame([{"epochs": epochs, "lot_size": 20, "learning_rate": 0.1, "noise": 1.2, "clip": 0.5}])


def test_a_continued_evaluation_has_the_uninterrupted_rows_and_pays_only_its_added_epochs(tmp_path):
    """An evaluation to 3 epochs, its state kept in its Parquet file, continued to 8 by a second evaluation:
    its rows are the uninterrupted training's at epochs 4-8 (utilities, epsilons, index and seed), the
    first costs 1 epoch, and the two parts cost the 8 epochs of one training. Continued by replay (no
    state), the rows are the same and the first pays for epochs 1-4."""
    problem, data = _linear_problem()
    traces = TraceSettings()
    whole = evaluate(problem, _point(8), data, 3, 7, "dpareto", 0, 5, traces)
    first = evaluate(problem, _point(3), data, 3, 7, "dpareto", 0, 5, traces)
    write_frame(first, tmp_path / "first.parquet", {})
    state = read_training_states(tmp_path / "first.parquet")[5]
    seed = int(first["seed"].iloc[0])
    rest = evaluate(problem, _point(8), data, 3, 7, "dpareto", 0, 99, traces, Continuation(5, seed, 3, 3, state))
    expected = whole[whole["epochs"] > 3].reset_index(drop=True)
    for column in ("epochs", "epsilon", "utility", "index", "seed"):
        assert rest[column].tolist() == expected[column].tolist(), column
    assert np.array_equal(np.stack(rest["utility_runs"]), np.stack(expected["utility_runs"]))
    assert rest["cost_epochs"].tolist() == [1.0] * 5 and (rest["segment_start"] == 3).all()
    assert not rest["replayed"].any() and rest["trace_final"].tolist() == [False] * 4 + [True]
    assert spent(pd.concat([first, rest])) == spent(whole) == 8
    assert trainings(pd.concat([first, rest])) == 1
    for _, row in rest.iterrows():
        assert row["epsilon"] == dpsgd.epsilon(300, 20, int(row["epochs"]), 1.2, 1e-5, "pld")
    replayed = evaluate(problem, _point(8), data, 3, 7, "dpareto", 0, 99, traces, Continuation(5, seed, 3, 3, None))
    assert np.array_equal(np.stack(replayed["utility_runs"]), np.stack(expected["utility_runs"]))
    assert replayed["replayed"].all() and replayed["cost_epochs"].tolist() == [4.0, 1.0, 1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="cannot continue"):
        evaluate(problem, _point(3), data, 3, 7, "dpareto", 0, 99, traces, Continuation(5, seed, 3, 3, state))


def test_continued_rows_stay_where_they_were_trained():
    """A training's second stretch keeps its index but comes after the trainings before it in cost order."""
    rows = pd.DataFrame({"index": [0, 0, 1, 0, 2], "segment_start": [0, 0, 0, 2, 0], "cost_epochs": [1.0] * 5})
    assert in_training_order(rows).index.tolist() == [0, 1, 2, 3, 4]
    shuffled = rows.iloc[[2, 0, 1, 3, 4]]
    assert in_training_order(shuffled)["index"].tolist() == [0, 0, 1, 0, 2]


def test_continuations_cost_the_epochs_they_add_or_every_epoch_when_replayed():
    problem, _ = _linear_problem()
    evals = pd.DataFrame({"index": [3, 3, 4, 5], "epochs": [1, 2, 9, 4], "lot_size": 20, "learning_rate": 0.1,
                          "noise": 1.0, "clip": 0.5, "seed": [11, 11, 12, 13], "failure": [None, None, None, "boom"],
                          "evaluation": [-1, -1, 0, 1]})
    options = resume.continuations(problem, evals)
    # training 3 reached 2 of 9 (training 4 is at the top, training 5 failed)
    assert options.trainings["index"].tolist() == [3] and options.points[:, 0].tolist() == list(range(3, 10))
    assert options.cost.tolist() == list(range(1, 8))
    fields = options.proposal_fields(2)
    assert fields == {"resumes": 3, "resumes_seed": 11, "resumes_from": 2, "resumes_evaluation": -1,
                      "resumes_replayed": False, "cost_axis": 3.0}
    replaying = Problem("replayed", None, _Unresumable(), problem.domain)
    assert resume.continuations(replaying, evals, replayed=True).cost.tolist() == list(range(3, 10))
    assert len(resume.continuations(replaying, evals).points) == 0   # DPareto continues saved states only
    assert len(options.without(3).points) == 0


class _Unresumable(LinearDPSGD):
    resumable = False

    def __init__(self):
        super().__init__("sgd")


@pytest.mark.parametrize("resuming, search", [(False, "box"), (True, "box"), (True, "levels")])
def test_a_round_values_every_candidate_by_its_gain_per_epoch(resuming, search):
    """With resume, a round's proposal records what it continues (or that it is new) and what it costs; its
    acquisition is the gain per epoch of cost, so no candidate worth more per epoch was passed over. Searching on
    epsilon levels (bo/levels.py), the traces' earlier epochs are points at smaller epsilon and trainings still
    continue."""
    problem, data = _linear_problem()
    traces = TraceSettings()
    initial = pd.concat([_point(e).assign(noise=n, learning_rate=lr) for e, n, lr in
                         [(2, 0.6, 0.3), (3, 1.5, 0.05), (2, 3.0, 0.2), (4, 0.8, 0.1), (1, 2.0, 0.4), (2, 1.0, 0.02)]],
                        ignore_index=True)
    evals = evaluate(problem, initial, data, 2, 3, "random", 0, 0, traces)
    settings = Settings(candidates=300, gp_restarts=1, privacy_model="exact", acquisition="hvpoi-region",
                        resume=resuming, path_value=search == "levels", region=(0.1, 20.0), search=search)
    points, _ = DPareto(settings).round(problem, evals, 1, 0, 0, 0, len(initial), None, context=Context(300, 0.5))
    row = points.iloc[0]
    assert row["search"] == search
    if not resuming:
        assert "resumes" not in points
        return
    assert row["open_trainings"] == 6 and 0 <= row["stopped_trainings"] <= 6
    if row["resumes"] >= 0:
        reached = evals[evals["index"] == row["resumes"]]["epochs"].max()
        assert row["resumes_from"] == reached and row["cost_axis"] == row["epochs"] - reached
    else:
        assert row["cost_axis"] == row["epochs"]


def test_moasha_stops_trainings_at_its_rungs_and_continues_the_others():
    """MOASHA's round: a new configuration to the first rung; the running training on to its next rung
    while MOASHA says continue; a round rebuilt from the rows alone proposes what the incremental one does."""
    pytest.importorskip("syne_tune")
    from dptradeoff.peers import moasha

    problem, data = _linear_problem()
    traces = TraceSettings()
    peer = moasha.MOASHAPeer()
    assert peer.rungs(9) == [1, 3, 9]
    evals = evaluate(problem, pd.concat([_point(e) for e in (2, 3)], ignore_index=True).assign(
        noise=[5.0, 5.0], learning_rate=[0.01, 0.012]), data, 2, 3, "random", 0, 0, traces)
    proposals = []
    for r in range(12):
        points, _ = peer.round(problem, evals, 1, 5, 0, r, 2, None)
        row = points.iloc[0]
        proposals.append(row)
        continues = (Continuation(int(row["resumes"]), int(row["resumes_seed"]), int(row["resumes_from"]), 2,
                                 None) if row["resumes"] >= 0 else None)
        if continues is None:
            assert row["epochs"] == 1 and row["cost_axis"] == 1
        else:
            assert row["epochs"] in (3, 9) and row["resumes_from"] in (1, 3)
            assert row["cost_axis"] == row["epochs"] - row["resumes_from"]
        new = evaluate(problem, points[problem.names], data, 2, 3, "moasha", 0, 10 + r, traces, continues)
        evals = pd.concat([evals, new.assign(evaluation=r)], ignore_index=True)
    kinds = [p["resumes"] >= 0 for p in proposals]
    assert any(kinds) and not all(kinds), "MOASHA neither stopped nor continued a training in 12 rounds"
    assert proposals[-1]["stopped_trainings"] > 0
    again, _ = peer.round(problem, evals, 1, 5, 0, 12, 2, None)   # fed only the last rows
    moasha._CACHE.clear()   # rebuilt from the rows alone: the same proposal
    once_more, _ = peer.round(problem, evals, 1, 5, 0, 12, 2, None)
    assert again.drop(columns="proposal_seconds").equals(once_more.drop(columns="proposal_seconds"))


def test_moasha_without_traces_or_with_batches_is_refused_in_one_sentence():
    from dptradeoff import UserError
    from dptradeoff.study import check_methods

    config = {"dpareto": {"problems": ["adult-logreg-sgd"], "methods": ["dpareto", "moasha"], "traces": False,
                          "batch_size": 1}, "problems": {}}
    with pytest.raises(UserError, match="set dpareto.traces: true or remove moasha"):
        check_methods(config)
    config["dpareto"] |= {"traces": True, "batch_size": 2}
    with pytest.raises(UserError, match="set dpareto.batch_size: 1 or remove moasha"):
        check_methods(config)
    config["dpareto"]["batch_size"] = 1
    check_methods(config)


def test_a_path_is_worth_the_hypervolume_its_checkpoints_add_together():
    """RegionHVPoI.path: the gain of a training's checkpoints (the union of what they dominate, not the sum of
    each one's gain) against hypervolume_2d of the front with and without them, in the region's box; a path of
    one checkpoint is worth the point's own HVPoI."""
    from dptradeoff.pareto import hypervolume_2d
    from dptradeoff.bo.propose import RegionHVPoI

    rng = np.random.default_rng(4)
    front = np.column_stack([np.sort(rng.uniform(-3, 1, 6)), np.sort(rng.uniform(-2, 1, 6))[::-1]])
    lo, hi, cap = -4.0, 2.0, 1.5
    acquisition = RegionHVPoI(front[:, 0], front[:, 1], lo, hi, cap)
    x = np.sort(rng.uniform(-5, 3, (50, 5)), axis=1)
    mean = rng.uniform(-3, 1.5, (50, 5))
    x[::7, 3:] = np.nan                              # shorter paths
    sure = lambda mask: np.full(mask.sum(), 1e-10)   # noqa: E731  (PoI 1 or 0: the gain alone)
    values = acquisition.path(x, mean, sure)
    base = hypervolume_2d(np.column_stack([np.clip(front[:, 0], lo, hi), front[:, 1]]), [hi, cap])
    for k in range(50):
        keep = ~np.isnan(x[k])
        path = np.column_stack([np.clip(x[k][keep], lo, hi), mean[k][keep]])
        added = hypervolume_2d(np.vstack([np.column_stack([np.clip(front[:, 0], lo, hi), front[:, 1]]), path]),
                               [hi, cap]) - base
        assert values[k] == pytest.approx(added, abs=1e-9), k
    single = acquisition.path(x[:, :1], mean[:, :1], lambda mask: np.full(mask.sum(), 0.04))
    assert np.allclose(single, acquisition(x[:, 0], mean[:, 0], np.full(50, 0.2)))
