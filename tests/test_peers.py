"""The peer optimisers (Optuna TPE, Optuna GP, BoTorch qLogNEHVI) as chain methods: points inside the
problem's domain, integers as integers, the same points for the same seed and evaluations."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo.transforms import error_to_gp, privacy_to_gp
from dptradeoff.peers import PEERS
from dptradeoff.peers.botorch_ehvi import REFERENCE
from dptradeoff.problems import PROBLEMS
from dptradeoff.problems.evaluate import evaluate


@pytest.fixture(scope="module")
def svt_evaluations():
    problem = PROBLEMS["svt"]
    points = sample(problem, 12, np.random.default_rng(0))
    return problem, evaluate(problem, points, None, 10, 1, "random", 0)


# MOASHA proposes stretches of traced trainings one at a time (svt has no trace axis): tests/test_resume.py
@pytest.mark.parametrize("name", [name for name in PEERS if name != "moasha"])
def test_a_peer_proposes_inside_the_domain_and_the_same_points_for_the_same_seed(svt_evaluations, name):
    problem, evals = svt_evaluations
    peer = PEERS[name]
    first, record = peer.round(problem, evals, 2, seed=7, run=0, round_index=3, initial=12, previous=None)
    again, _ = peer.round(problem, evals, 2, seed=7, run=0, round_index=3, initial=12, previous=None)
    assert len(first) == 2 and first["batch_position"].tolist() == [0, 1]
    pd.testing.assert_frame_equal(first[problem.names], again[problem.names])
    assert first["bound"].dtype.kind == "i"
    for p in problem.domain:
        assert first[p.name].between(p.low, p.high).all()
    assert (first["proposal_seconds"] > 0).all()
    assert record["settings"] == peer.settings
    # what a round proposes depends on its seed (the round's own, derived from the chain's)
    others = [peer.round(problem, evals, 1, seed=s, run=0, round_index=3, initial=12, previous=None)[0] for s in (8, 9)]
    if name == "optuna-tpe":
        assert len({tuple(o[problem.names].iloc[0]) for o in others + [first.iloc[:1]]}) > 1


def test_optuna_peers_see_points_outside_the_domain_at_its_edge():
    """Tables 3-4 accept adult learning rates up to 0.1, beyond the domain's 0.05: Optuna's trials must
    lie in their distributions, so such a point is given to the sampler at the domain's edge."""
    problem = PROBLEMS["adult-logreg-sgd"]
    points = pd.DataFrame({"epochs": [1, 2, 3], "lot_size": [64, 128, 256], "learning_rate": [0.1, 0.01, 0.002],
                           "noise": [1.0, 2.0, 4.0], "clip": [1.0, 1.0, 1.0]})
    evals = points.assign(epsilon=[1.0, 0.5, 0.2], error=[0.2, 0.22, 0.24])
    out, _ = PEERS["optuna-tpe"].round(problem, evals, 1, seed=1, run=0, round_index=0, initial=3, previous=None)
    assert problem.domain[2].low <= out["learning_rate"].iloc[0] <= problem.domain[2].high


def test_botorch_maximises_the_negated_gp_objectives_from_the_papers_anti_ideal_point():
    assert REFERENCE == (-float(privacy_to_gp(10.0)), -float(error_to_gp(0.999)))


def test_botorch_rounds_never_compile_the_fused_kernel(svt_evaluations):
    """A run killed while BoTorch compiled its fused C++ kernel left a file lock on which every later
    round waited forever: the peer uses BoTorch's pure-PyTorch path and never starts the compile."""
    from botorch.acquisition.multi_objective import logei

    problem, evals = svt_evaluations
    PEERS["botorch"].round(problem, evals, 1, seed=3, run=0, round_index=0, initial=12, previous=None)
    assert logei._load_attempted and logei._C is None


def test_a_botorch_round_never_lists_the_loaded_libraries(svt_evaluations, monkeypatch):
    """threadpoolctl lists the loaded libraries holding the dynamic loader's lock while waiting for the
    GIL; BoTorch did so in every minimisation, and a round in one thread of the Snakemake process
    deadlocked against another thread importing TensorFlow. After the process-wide BLAS limit, a
    round must not list them again."""
    import threadpoolctl

    from dptradeoff.bo.chain_round import limit_blas_threads

    limit_blas_threads()
    scans = []
    original = threadpoolctl.ThreadpoolController._load_libraries
    monkeypatch.setattr(threadpoolctl.ThreadpoolController, "_load_libraries",
                        lambda self: scans.append(1) or original(self))
    problem, evals = svt_evaluations
    PEERS["botorch"].round(problem, evals, 1, seed=4, run=0, round_index=0, initial=12, previous=None)
    assert scans == []


def test_the_gp_peers_learn_from_dpareto_s_row_subsample_and_tpe_from_every_row():
    """dpareto.peer_gp_points: Optuna GP and BoTorch learn from at most that many rows, chosen by DPareto's
    own rule (every training's own point first: bo.propose.gp_rows); Optuna TPE learns from every row."""
    from dptradeoff.bo.propose import gp_rows

    rng = np.random.default_rng(0)
    trainings = [pd.DataFrame({"index": i, "epochs": range(1, 11), "epsilon": rng.uniform(0.1, 5, 10),
                               "error": rng.uniform(0.1, 0.5, 10), "trace_final": [False] * 9 + [True]})
                 for i in range(12)]
    evals = pd.concat(trainings, ignore_index=True)
    for name in ("optuna-gp", "botorch"):
        peer = PEERS[name].configured(40)
        rows = peer.learning_rows(evals)
        assert len(rows) == 40 and rows["trace_final"].sum() == 12
        pd.testing.assert_frame_equal(rows, gp_rows(evals, 40))
        assert len(PEERS[name].learning_rows(evals)) == len(evals)          # unconfigured: every row
    assert len(PEERS["optuna-tpe"].configured(40).learning_rows(evals)) == len(evals)
