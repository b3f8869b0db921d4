"""A release from the front (docs/release.md): its accounting cross-checked against Papernot &
Steinke's Thm 2 written out here and against dp_accounting, the random-choice (mixture) bound, the
selection's output distribution on neighbouring inputs (exactly, and by Monte Carlo through the real
`random_stopping`) against the bound, the roles of the rows, and one-sentence errors."""
from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from scipy import optimize
from scipy.special import logsumexp

from dptradeoff import UserError
from dptradeoff.expost.distributions import tnb_pmf
from dptradeoff.privacy import dpsgd
from dptradeoff.privacy.accountant import Accountant
from dptradeoff.privacy.events import (ComposedDpEvent, EpsilonDpEvent, GaussianDpEvent, RandomChoiceDpEvent,
                                       RepeatAndSelectDpEvent)
from dptradeoff.privacy.repeat_and_select import papernot_steinke_rdp, tnb_gamma
from dptradeoff.problems import get_problem
from dptradeoff.problems.oracle import Data
from dptradeoff.problems.rows import RowSplit
from dptradeoff.release import accounting, candidates
from dptradeoff.release.selection import random_stopping
from dptradeoff.release.settings import CandidateSettings
from dptradeoff.release.trainers import check_releasable

ORDERS = np.array([1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64])
N_TRAIN, N_VAL = 5000, 1000
POINTS = [{"epochs": 2, "lot_size": 64, "learning_rate": 0.05, "noise": 1.0, "clip": 1.0},
          {"epochs": 8, "lot_size": 256, "learning_rate": 0.01, "noise": 1.0, "clip": 0.5},
          {"epochs": 1, "lot_size": 16, "learning_rate": 0.02, "noise": 1.0, "clip": 2.0}]


def _event(point):
    return dpsgd.training_event(N_TRAIN, point["lot_size"], point["epochs"], point["noise"])


def _plan(total=1.0, eta=1.0, mean=4.0, score_noise=0.01, points=POINTS):
    return accounting.plan(points, _event, total=total, delta=1e-5, eta=eta, mean_trials=mean,
                           score_noise=score_noise, validation_rows=N_VAL, accountant=Accountant())


# --- Papernot & Steinke Thm 2, written out independently -----------------------------------------------

def ps_gamma(eta: float, mean: float) -> float:
    """gamma of D_{eta, gamma} with E[K] = mean: P&S §2, E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta))
    for eta > 0, (1 - gamma) / (gamma log(1/gamma)) at eta = 0; solved by bisection here."""
    def expected(g):
        return (1 - g) / (g * math.log(1 / g)) if eta == 0 else eta * (1 - g) / (g * (1 - g**eta))
    return optimize.bisect(lambda g: expected(g) - mean, 1e-12, 1 - 1e-9, xtol=1e-15)


def ps_theorem2(orders, rdp, eta, mean):
    """Papernot & Steinke, "Hyperparameter tuning with Renyi differential privacy" (ICLR 2022), Thm 2: if
    Q is (lambda, eps)-RDP and (lambdahat, epshat)-RDP, repeating Q K ~ D_{eta, gamma} times and
    returning the best is (lambda, eps')-RDP with
    eps' = eps + (1 + eta)(1 - 1/lambdahat) epshat + (1 + eta) log(1/gamma) / lambdahat + log(E[K]) / (lambda - 1),
    for any lambda > 1, lambdahat >= 1 (the best lambdahat of the grid taken)."""
    gamma = ps_gamma(eta, mean)
    out = []
    for lam, eps in zip(orders, rdp):
        out.append(min(eps + (1 + eta) * (1 - 1 / lh) * eh + (1 + eta) * math.log(1 / gamma) / lh
                       + math.log(mean) / (lam - 1) for lh, eh in zip(orders, rdp)))
    return np.array(out)


def independent_trial_rdp(plan):
    """A trial's RDP: each candidate's DP-SGD run by dp_accounting's own RdpAccountant (replace-one,
    sampling without replacement), plus the score's Gaussian alpha / (2 z^2) with z = sd (n_val - 1);
    the largest over the candidates."""
    z_score = 0.01 * (N_VAL - 1)
    curves = []
    for c in plan.candidates:
        acc = rdp_lib.RdpAccountant(list(ORDERS), dp_accounting.NeighboringRelation.REPLACE_ONE)
        steps = c.point["epochs"] * round(N_TRAIN / c.point["lot_size"])
        acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.SampledWithoutReplacementDpEvent(
            N_TRAIN, c.point["lot_size"], dp_accounting.GaussianDpEvent(c.point["noise"])), steps))
        curves.append(np.asarray(acc._rdp) + ORDERS / (2 * z_score**2))
    return np.max(curves, axis=0)


@pytest.mark.parametrize("eta, mean", [(1.0, 4.0), (0.0, 6.0), (0.5, 10.0)])
def test_the_release_total_is_papernot_steinke_theorem_2_over_the_largest_candidate_rdp(eta, mean):
    plan = _plan(eta=eta, mean=mean)
    ours = Accountant().rdp(plan.release_event, ORDERS)
    theirs = ps_theorem2(ORDERS, independent_trial_rdp(plan), eta, mean)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    eps_independent, _ = rdp_lib.compute_epsilon(ORDERS, theirs, 1e-5)
    # ours converts over more orders, so it is at most the independent value, and close to it
    assert plan.total_epsilon <= 1.0 and plan.total_epsilon <= eps_independent * (1 + 1e-9)
    assert plan.total_epsilon == pytest.approx(eps_independent, rel=0.05)
    assert plan.total_epsilon == Accountant().epsilon(plan.release_event, 1e-5)


def test_the_release_of_one_candidate_agrees_with_dp_accountings_repeat_and_select():
    plan = _plan(points=POINTS[:1])
    event = RepeatAndSelectDpEvent(ComposedDpEvent([_event(plan.candidates[0].point),
                                                    GaussianDpEvent(plan.score_noise_multiplier)]), 4.0, 1.0)
    acc = rdp_lib.RdpAccountant(list(ORDERS), dp_accounting.NeighboringRelation.REPLACE_ONE)
    theirs = acc.compose(event).get_epsilon(1e-5)
    ours = Accountant().epsilon(event, 1e-5)
    assert ours == pytest.approx(theirs, rel=0.03) and ours == pytest.approx(plan.total_epsilon, rel=1e-12)


def test_eps0_is_the_largest_that_fits_and_every_candidate_is_calibrated_to_it():
    plan = _plan()
    assert 0 < plan.eps0 < 1.0 and plan.total_epsilon <= 1.0
    for c in plan.candidates:
        assert c.training_epsilon <= plan.eps0
        assert Accountant().epsilon(_event(c.point), 1e-5) == pytest.approx(c.training_epsilon, rel=1e-12)
        assert c.training_epsilon >= 0.95 * plan.eps0      # calibrated, not merely below
    assert _plan(total=10.0).eps0 > plan.eps0
    # one step of the bisection's tolerance above eps0 no longer fits in the total
    above = plan.eps0 * (1 + 2 * accounting.EPS0_TOLERANCE)
    cals = [accounting.calibrate_noise(Accountant(), lambda z, p=p: _event({**p, "noise": z}), above, 1e-5) for p in POINTS]
    trial = accounting.trial_event([_event({**p, "noise": c.noise}) for p, c in zip(POINTS, cals)],
                                   plan.score_noise_multiplier)
    assert Accountant().epsilon(accounting.release_event(trial, 1.0, 4.0), 1e-5) > 1.0


def test_a_random_choice_among_mechanisms_is_bounded_by_its_largest_member():
    """The trial is a data-independent mixture; its RDP is bounded by the largest member's at every order
    (exact divergences of a mixture of randomized responses), and the accountant takes that largest."""
    def rr(eps, b):
        keep = math.exp(eps) / (1 + math.exp(eps))
        return np.array([keep, 1 - keep]) if b == 0 else np.array([1 - keep, keep])

    def renyi(p, q, a):
        return math.log(np.sum(p**a * q**(1 - a))) / (a - 1)

    members = (0.3, 1.2, 2.0)
    for a in ORDERS:
        mix1 = sum(rr(e, 1) for e in members) / 3
        mix0 = sum(rr(e, 0) for e in members) / 3
        assert renyi(mix1, mix0, a) <= max(renyi(rr(e, 1), rr(e, 0), a) for e in members) + 1e-12
    events = [_event({**p, "noise": 1.5}) for p in POINTS]
    np.testing.assert_array_equal(Accountant().rdp(RandomChoiceDpEvent(tuple(events)), ORDERS),
                                  np.max([Accountant().rdp(e, ORDERS) for e in events], axis=0))


# --- the selection on a tiny instance: exact distribution, Monte Carlo, the bound ------------------

EPS = (1.0, 2.0)   # two candidates: randomized response on the data bit b, at these epsilons


def _trial_probabilities(b):
    """P[(candidate c, model m)] of one trial on the bit b: c uniform, m = b with probability e^eps/(1+e^eps)."""
    p = {}
    for c, eps in enumerate(EPS):
        keep = math.exp(eps) / (1 + math.exp(eps))
        for m in (0, 1):
            p[(c, m)] = 0.5 * (keep if m == b else 1 - keep)
    return p


def _score(output):
    return output[1] + 0.1 * output[0]   # distinct scores: the best of a set of outputs is unique


def _best_probabilities(b, eta, mean):
    """P[best = y] = E[F(<= y)^K - F(< y)^K] over K ~ D_{eta, gamma}, summed over the pmf."""
    p = _trial_probabilities(b)
    ks = np.arange(1, 2000)
    pmf = tnb_pmf(ks, eta, tnb_gamma(eta, mean))
    out, below = {}, 0.0
    for y in sorted(p, key=_score):
        out[y] = float(np.sum(pmf * ((below + p[y]) ** ks - below**ks)))
        below += p[y]
    return out


def _renyi(p, q, a):
    return math.log(sum(p[y] ** a * q[y] ** (1 - a) for y in p)) / (a - 1)


def _tiny_trial(b):
    def trial(rng):
        c = int(rng.integers(2))
        keep = math.exp(EPS[c]) / (1 + math.exp(EPS[c]))
        m = b if rng.random() < keep else 1 - b
        return _score((c, m)), (c, m)
    return trial


@pytest.mark.parametrize("eta, mean", [(1.0, 4.0), (0.0, 3.0)])
def test_the_selection_on_neighbouring_inputs_stays_within_the_papernot_steinke_bound(eta, mean):
    trial_rdp = [max(_renyi(_trial_probabilities(1), _trial_probabilities(0), a),
                     _renyi(_trial_probabilities(0), _trial_probabilities(1), a)) for a in ORDERS]
    bound = papernot_steinke_rdp(ORDERS, trial_rdp, eta, mean)
    best = {b: _best_probabilities(b, eta, mean) for b in (0, 1)}
    assert sum(best[0].values()) == pytest.approx(1.0, abs=1e-12)
    for a, limit in zip(ORDERS, bound):
        assert _renyi(best[1], best[0], a) <= limit and _renyi(best[0], best[1], a) <= limit
    # (eps, delta) read off the bound holds for every set of outputs (the hockey-stick divergence)
    eps, _ = rdp_lib.compute_epsilon(ORDERS, bound, 1e-3)
    for p, q in ((best[0], best[1]), (best[1], best[0])):
        assert sum(max(0.0, p[y] - math.exp(eps) * q[y]) for y in p) <= 1e-3
    # the implementation samples exactly that distribution
    draws = 60_000
    for b in (0, 1):
        rng = np.random.default_rng(b)
        counts = pd.Series([random_stopping(_tiny_trial(b), eta, mean, rng).output for _ in range(draws)]).value_counts()
        for y, p in best[b].items():
            assert abs(counts.get(y, 0) / draws - p) <= 5 * math.sqrt(p * (1 - p) / draws) + 1e-4, (b, y)


def test_releasing_the_number_of_trials_would_break_the_bound():
    """Why K is not released: with K known, the output (K, best) on neighbouring inputs diverges far beyond
    the bound (best of k known trials is k-fold composition at worst)."""
    eta, mean = 1.0, 4.0
    trial_rdp = [max(_renyi(_trial_probabilities(1), _trial_probabilities(0), a),
                     _renyi(_trial_probabilities(0), _trial_probabilities(1), a)) for a in ORDERS]
    bound = papernot_steinke_rdp(ORDERS, trial_rdp, eta, mean)
    pmf = tnb_pmf(np.arange(1, 80), eta, tnb_gamma(eta, mean))

    def log_joint(b):
        p, out = _trial_probabilities(b), {}
        for k in range(1, 80):
            below = 0.0
            for y in sorted(p, key=_score):
                out[(k, y)] = math.log(pmf[k - 1]) + math.log((below + p[y]) ** k - below**k)
                below += p[y]
        return out

    j1, j0 = log_joint(1), log_joint(0)
    a = 4.0
    joint = max(logsumexp([a * p[y] + (1 - a) * q[y] for y in p]) / (a - 1) for p, q in ((j1, j0), (j0, j1)))
    assert joint > 10 * bound[list(ORDERS).index(a)]


# --- candidates, rows, errors -----------------------------------------------------------------------

def test_the_candidates_are_front_points_better_than_the_trivial_predictor_nearest_the_total():
    problem = get_problem("adult-logreg-sgd")
    rows = [dict(p, epsilon=e, error=err, utility=1 - err, failure=None)
            for p, e, err in [(POINTS[0], 0.1, 0.24), (POINTS[1], 0.5, 0.22), (POINTS[2], 2.0, 0.18),
                              ({**POINTS[2], "epochs": 3}, 3.0, 0.25), ({**POINTS[0], "epochs": 5}, 8.0, 0.15)]]
    front, better = candidates.front_points(pd.DataFrame(rows), problem, error_floor=0.24)
    assert better and list(front["epsilon"]) == [0.5, 2.0, 8.0]   # 0.1 sits at the floor, 3.0 is dominated
    whole, better = candidates.front_points(pd.DataFrame(rows), problem, error_floor=0.1)
    assert not better and list(whole["epsilon"]) == [0.1, 0.5, 2.0, 8.0]   # none beats it: the whole front
    points, values, origins = candidates.choose(front, problem, 1.0, CandidateSettings(2, 1, 0.2),
                                                np.random.default_rng(0))
    assert [v[0] for v in values] == [0.5, 0.5, 2.0, 2.0] and origins == ["front", "perturbed"] * 2
    assert points[0]["epochs"] == 8 and points[1]["noise"] == points[0]["noise"]
    assert all(problem.check(p) == p for p in points)
    with pytest.raises(UserError, match="has no successful evaluation"):
        candidates.choose(front.iloc[:0], problem, 1.0, CandidateSettings(2, 0, 0.2), np.random.default_rng(0))


def test_the_tuning_and_private_rows_are_disjoint_and_the_test_rows_untouched():
    x = np.arange(1000, dtype=float)[:, None]
    data = Data(x, np.arange(1000) % 2, -x[:100], np.arange(100) % 2, "s", "label")
    tuning = RowSplit(0.2, 7, "tuning").select(data)
    private = RowSplit(0.2, 7, "private").select(data)
    seen = np.concatenate([tuning.x_train[:, 0], tuning.x_test[:, 0], private.x_train[:, 0]])
    assert sorted(seen) == list(range(1000))                    # every training row in exactly one part
    assert len(private.x_train) == 800 and len(tuning.x_test) == 40
    assert np.array_equal(private.x_test, data.x_test) and not np.isin(tuning.x_test, data.x_test).any()
    assert np.array_equal(RowSplit(0.2, 7, "private").select(data).x_train, private.x_train)   # seeded


def test_a_total_too_small_for_one_trial_stops_with_the_smallest_total_that_works():
    with pytest.raises(UserError) as error:
        _plan(total=0.02)
    message = str(error.value)
    assert "too small for even one trial" in message and message.count(".") >= 1
    smallest = float(message.split("at least ")[1].split(",")[0])
    assert _plan(total=smallest).total_epsilon <= smallest


def test_a_user_oracle_without_train_stops_with_what_to_add():
    from dptradeoff.problems.user import user_problem

    entry = {"oracle": "tests/user_problems/gaussian_mean.py", "domain": {"noise": {"low": 0.1, "high": 1.0}}}
    with pytest.raises(UserError, match=r"has no event\(\) method, which a release needs: add event\(point, \*, n\)"):
        check_releasable(user_problem("mine", entry))
    check_releasable(get_problem("adult-logreg-sgd"))


def test_the_release_config_is_checked_and_its_tuning_split_becomes_a_problem():
    import copy

    import yaml

    from dptradeoff.config import SCHEMA, check
    from dptradeoff.problems import definition, resolve

    with open("config/config.yaml") as f:
        default = yaml.safe_load(f)
    config = copy.deepcopy(default)
    check(config, SCHEMA)
    tuning = resolve("adult-logreg-sgd-tuning", definition(config, "adult-logreg-sgd-tuning"))
    assert tuning.name == "adult-logreg-sgd-tuning" and tuning.rows.part == "tuning" and tuning.rows.fraction == 0.2
    assert tuning.names == get_problem("adult-logreg-sgd").names
    assert config["problems"]["adult-logreg-sgd-tuning"]["repeats"] == default["problems"]["adult-logreg-sgd"]["repeats"]
    public = copy.deepcopy(default)
    public["release"]["tuning"] = {"public": "no-such-problem"}
    with pytest.raises(UserError, match=r"release.tuning.public names 'no-such-problem', which is neither built in"):
        check(public, SCHEMA)
    public["release"]["tuning"] = {"public": "adult-logreg-adam"}   # the very rows it releases from
    with pytest.raises(UserError, match=r"trains on adult, the dataset adult-logreg-sgd releases from"):
        check(public, SCHEMA)
    public["release"]["tuning"] = {"public": "mnist-mlp1-sgd"}
    check(public, SCHEMA)
    assert "adult-logreg-sgd-tuning" not in public["problems"]   # a public front gives up no rows


def test_the_private_rows_split_into_disjoint_training_and_validation_rows(tmp_path):
    from dptradeoff.io import matrix_table, write_table
    from dptradeoff.release.run import private_data
    from dptradeoff.release.settings import ReleaseSettings

    for part, n in (("train", 1000), ("test", 300)):
        x = np.c_[np.arange(n), np.zeros(n)].astype(np.float32) + (0 if part == "train" else 10_000)
        write_table(matrix_table(x, np.arange(n) % 2), tmp_path / f"adult/{part}.parquet", {"source": "test"})
    release = {"problem": "adult-logreg-sgd", "tuning": {"split": 0.2}, "validation": 0.25, "epsilon": 1.0,
               "delta": 1e-5, "selection": {"method": "random-stopping", "eta": 1.0, "mean_trials": 4},
               "score_noise": 0.01, "candidates": {"max": 8, "perturbations": 0, "scale": 0.2}}
    settings = ReleaseSettings.from_config({"seed": 3, "release": release})
    private = private_data(get_problem("adult-logreg-sgd"), settings, str(tmp_path))
    training, validation = private.training.x_train[:, 0], private.validation.x_test[:, 0]
    assert len(training) == 600 and len(validation) == 200 and not np.isin(training, validation).any()
    tuning = RowSplit(0.2, settings.split_seed(), "tuning").positions(1000)[0]
    assert not np.isin(np.r_[training, validation], tuning).any()      # no tuning row is private
    assert (private.test.x_test[:, 0] >= 10_000).all() and len(private.test.y_test) == 300
    assert set(private.training.y_train) == {-1.0, 1.0}                 # prepared as the oracle trains


PURE = "tests/user_problems/pure_epsilon.py"
PURE_DOMAIN = {"eps": {"low": 0.01, "high": 10.0, "log": True}, "clip": {"low": 0.05, "high": 5.0, "log": True}}


def _release_config(oracle: str, **entry) -> dict:
    import yaml

    with open("config/config.yaml") as f:
        config = yaml.safe_load(f)
    config["problems"]["mine"] = {"oracle": oracle, "dataset": "adult", "domain": PURE_DOMAIN, **entry}
    config["release"]["problem"] = "mine"
    return config


def test_whether_a_problem_can_be_released_is_checked_with_the_config_before_any_tuning():
    from dptradeoff.config import SCHEMA, check

    check(_release_config(f"{PURE}:PureCentroid"), SCHEMA)    # pure epsilon, its own calibrate: releasable
    with pytest.raises(UserError, match=r"The oracle of mine has no event\(\) method, which a release needs"):
        check(_release_config("tests/user_problems/gaussian_mean.py",
                              domain={"sigma": {"low": 0.01, "high": 1.0}, "clip": {"low": 0.1, "high": 1.0}}), SCHEMA)
    with pytest.raises(UserError, match=r"mine cannot be released: its training's event SparseVectorDpEvent is composed "
                                        r"with the noisy score under RDP, and the accountant has no analysis"):
        check(_release_config(f"{PURE}:Unanalysable"), SCHEMA)


def test_a_pure_epsilon_oracle_is_recalibrated_by_its_own_calibrate_and_checked_by_the_accountant():
    from dptradeoff.problems.user import user_problem
    from dptradeoff.release.trainers import calibrated

    problem = user_problem("mine", {"oracle": f"{PURE}:PureCentroid", "domain": PURE_DOMAIN})
    assert calibrated(problem, Accountant(), {"eps": 3.0, "clip": 1.0}, n=500, epsilon=0.4, delta=1e-5) == (
        {"eps": 0.4, "clip": 1.0}, 0.4)
    release_plan = accounting.plan([{"eps": 3.0, "clip": 1.0}], lambda p: EpsilonDpEvent(p["eps"]), total=1.0, delta=1e-5, eta=1.0,
                        mean_trials=3.0, score_noise=0.01, validation_rows=2000, accountant=Accountant(),
                        calibrate=lambda p, e: calibrated(problem, Accountant(), p, n=500, epsilon=e, delta=1e-5))
    assert 0 < release_plan.eps0 < 1 and release_plan.total_epsilon <= 1.0
    assert release_plan.candidates[0].point["eps"] == release_plan.eps0
    liar = user_problem("liar", {"oracle": f"{PURE}:OverCalibrating", "domain": PURE_DOMAIN})
    with pytest.raises(UserError, match=r"The calibrate\(\) of liar's oracle returned .* but the accountant gives its "
                                        r"training epsilon 0\.8"):
        calibrated(liar, Accountant(), {"eps": 3.0, "clip": 1.0}, n=500, epsilon=0.4, delta=1e-5)
