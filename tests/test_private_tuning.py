"""A release tuned privately (docs/release.md, "Private tuning: every row protected"): WBK19 Thm 9 against its
form written out in 60-digit arithmetic and against the exact Renyi divergence of a subsampled mechanism; the
release's total against an independent recomputation (tests/independent_release_epsilon.py), for the prior
search and the subsampled one; every trial and the final training charged; the subsample secret; the config."""
from __future__ import annotations

import copy
import math

import mpmath as mp
import numpy as np
import pytest
import yaml

from dptradeoff import UserError
from dptradeoff.privacy import pure, wor_general
from dptradeoff.privacy.accountant import Accountant
from dptradeoff.privacy.events import EpsilonDpEvent, RepeatAndSelectDpEvent, SampledWithoutReplacementDpEvent
from dptradeoff.release.settings import PriorTuning, ReleaseSettings, SubsampledTuning

from independent_release_epsilon import independent_total, papernot_steinke, thm9_log_a

PURE = "tests/user_problems/pure_epsilon.py"
DOMAIN = {"eps": {"low": 0.01, "high": 10.0, "log": True}, "clip": {"low": 0.05, "high": 5.0, "log": True}}


def _inner(orders):
    """A mechanism's RDP: Papernot & Steinke's over a 0.8-DP trial (E[K] = 5, eta = 1)."""
    orders = np.asarray(orders, dtype=float)
    with mp.workdps(30):
        return np.array([float(v) for v in papernot_steinke(list(orders), list(pure.epsilon_dp_rdp(0.8, orders)), 1.0, 5.0)])


@pytest.mark.parametrize("q", [0.05, 0.3, 0.9])
def test_the_subsampled_rdp_is_wbk19_theorem_9_written_out(q):
    orders = np.array([1.5, 2.0, 2.5, 3.0, 5.0, 7.5, 16.0, 40.0, 64.0, 80.0])
    ours = wor_general.rdp(q, _inner, orders)
    inner, unsampled = list(_inner(np.arange(2, 65))), _inner(orders)
    with mp.workdps(60):
        log_a = {a: thm9_log_a(mp.mpf(q), [mp.mpf(v) for v in inner], a) for a in range(2, 65)}
        for order, value, own in zip(orders, ours, unsampled):
            if order > 64:
                assert value == own   # Thm 9 not computed there: the mechanism's own
                continue
            at = max(order, 2.0)
            lo, hi = math.floor(at), math.ceil(at)
            expected = ((hi - at) * log_a[lo] + (at - lo) * log_a[hi]) / (at - 1) if hi > lo else log_a[lo] / (at - 1)
            assert value == pytest.approx(min(float(expected), own), rel=1e-10)   # never above the mechanism's own
    if q <= 0.3:
        assert (ours[orders <= 16] < unsampled[orders <= 16]).all()   # amplified


def _exact_renyi(p: np.ndarray, r: np.ndarray, alpha: int) -> float:
    return math.log(float(np.sum(p**alpha * r ** (1 - alpha)))) / (alpha - 1)


@pytest.mark.parametrize("m, n", [(1, 10), (3, 10), (9, 10)])
def test_theorem_9_bounds_the_exact_divergence_of_a_subsampled_mechanism(m, n):
    """M on m rows drawn without replacement from n: randomized response (eps = 1.5, whose RDP is exactly
    `epsilon_dp_rdp`) on the bit of the sample's first row. Neighbours differ in row 0 (1 against 0), every other
    row 0: M sees row 0 with probability m/n (it is then the sample's first row), so the output is the mixture
    q RR(1) + (1 - q) RR(0) against RR(0). Its exact Renyi divergence, both ways, stays within Thm 9 at every
    integer order, and the bound is not loose by orders of magnitude where q is small."""
    eps, q = 1.5, m / n
    one = np.array([math.exp(eps), 1.0]) / (1 + math.exp(eps))
    zero = one[::-1]
    mixture = q * one + (1 - q) * zero
    orders = np.arange(2, 33)
    bound = wor_general.rdp(q, lambda o: pure.epsilon_dp_rdp(eps, o), orders)
    for alpha, b in zip(orders, bound):
        exact = max(_exact_renyi(mixture, zero, alpha), _exact_renyi(zero, mixture, alpha))
        assert exact <= b * (1 + 1e-12)
        assert exact <= pure.epsilon_dp_rdp(eps, [alpha])[0]
    if q <= 0.1:
        assert bound[0] < 0.1 * pure.epsilon_dp_rdp(eps, [2.0])[0]   # order 2: amplified tenfold or more


def test_the_accountant_amplifies_any_mechanism_on_a_subsample_by_theorem_9():
    search = RepeatAndSelectDpEvent(EpsilonDpEvent(0.8), 5.0, 1.0)
    orders = np.array([2.0, 3.0, 8.0, 32.0])
    amplified = Accountant().rdp(SampledWithoutReplacementDpEvent(1000, 100, search), orders)
    assert amplified == pytest.approx(wor_general.rdp(0.1, lambda o: Accountant().rdp(search, o), orders), rel=1e-12)
    assert Accountant().epsilon(SampledWithoutReplacementDpEvent(1000, 100, search), 1e-5) < \
        Accountant().epsilon(search, 1e-5)


# --- a release tuned privately, end to end (a pure-epsilon oracle: its calibrate is exact, so it is quick) --------

def _data(tmp_path):
    from dptradeoff.io import matrix_table, write_table

    rng = np.random.default_rng(0)
    for part, n in (("train", 3000), ("test", 500)):
        x = rng.normal(size=(n, 3)).astype(np.float32)
        write_table(matrix_table(x, (x[:, 0] > 0).astype(int)), tmp_path / f"adult/{part}.parquet", {"source": "test"})
    return str(tmp_path)


def _settings(tuning: dict, randomness: str = "config-seed") -> ReleaseSettings:
    release = {"problem": "mine", "tuning": tuning, "validation": 0.2, "epsilon": 1.0, "delta": 1e-5,
               "selection": {"method": "random-stopping", "eta": 1.0, "mean_trials": 4}, "score_noise": 0.05,
               "candidates": {"max": 8, "perturbations": 0, "scale": 0.2}, "randomness": randomness}
    return ReleaseSettings.from_config({"seed": 5, "release": release})


def _problem():
    from dptradeoff.problems.user import user_problem

    return user_problem("mine", {"oracle": f"{PURE}:PureCentroid", "domain": DOMAIN, "dataset": "adult"})


@pytest.mark.parametrize("tuning", [{"private": "prior", "candidates": 6},
                                    {"private": "subsampled", "candidates": 6, "subsample": 0.3}])
def test_a_private_release_total_equals_its_independent_recomputation_and_protects_every_row(tmp_path, tuning):
    from dptradeoff.release.run import release

    settings, problem = _settings(tuning), _problem()
    record = release(problem, None, None, settings, Accountant(), data_dir=_data(tmp_path))
    total = record["guarantee"]["epsilon"]
    assert total <= 1.0
    assert total == pytest.approx(independent_total(record, problem, Accountant()), abs=1e-9)
    assert record["rows_protected"] == 1.0 and record["front"] is None
    assert record["tuning"]["problem"] is None and record["tuning"]["how"].startswith("none")
    assert all(c["origin"] == "prior" for c in record["candidates"])
    search = record["search"]
    if tuning["private"] == "subsampled":
        assert search["subsample_rows"] == 900 and search["training_rows"] == 720 and search["validation_rows"] == 180
        assert record["released"]["hyperparameters"]["eps"] == pytest.approx(record["eps0"])   # the final training
        assert "WBK19 Thm 9" in record["guarantee"]["accounting"]
    else:
        assert search["training_rows"] == 2400 and search["validation_rows"] == 600
    from dptradeoff.plots.release import release_figure, release_table

    table, _ = release_table(record, "test")
    release_figure(record, str(tmp_path / "release.pdf"), "test")   # no front to draw
    assert (tmp_path / "release.pdf").stat().st_size > 0
    rows = dict(zip(table["quantity"], table["value"]))
    assert rows["tuning data"].startswith("none: the search runs on") and rows["share of the training rows protected"] == "1"
    assert not any(q.startswith("front's best") for q in rows)


def test_a_private_release_needs_no_tuning_study(run_snakemake, tmp_path):
    """The workflow plans a private release from the data alone: no `<problem>-tuning` problem, no chain."""
    (tmp_path / "private.yaml").write_text(yaml.safe_dump({"studies": ["release"], "release": {"tuning": "private"}}))
    done = run_snakemake(tmp_path, "all", "-n", "--quiet", "rules", "--configfile", "config/config.yaml",
                         str(tmp_path / "private.yaml"))
    assert done.returncode == 0, done.stderr[-2000:]
    planned = done.stdout + done.stderr
    assert "release" in planned and "dpareto" not in planned and "random_sampling" not in planned


def test_every_trial_and_the_final_training_are_charged():
    """The subsampled release's event: the search (every trial's training and score, K ~ TNB) amplified, composed with
    the final training; dropping either lowers the total, and the plan's total is the full event's."""
    from dptradeoff.release import accounting

    subsampled = accounting.Subsampled(300, 3000, lambda p, e: ({**p, "eps": e}, e), lambda p: EpsilonDpEvent(p["eps"]))
    plan = accounting.plan([{"eps": 1.0, "clip": 1.0}], lambda p: EpsilonDpEvent(p["eps"]), total=1.0, delta=1e-5,
                           eta=1.0, mean_trials=4.0, score_noise=0.05, validation_rows=600, accountant=Accountant(),
                           calibrate=lambda p, e: ({**p, "eps": e}, e), subsampled=subsampled)
    final = EpsilonDpEvent(plan.eps0)
    search = RepeatAndSelectDpEvent(accounting.trial_event([EpsilonDpEvent(plan.eps0)], plan.score_noise_multiplier),
                                    4.0, 1.0)
    accountant = Accountant()
    whole = accountant.epsilon(subsampled.event(search, [{"eps": plan.eps0}]), 1e-5)
    assert plan.total_epsilon == pytest.approx(whole, rel=1e-12)
    assert accountant.epsilon(final, 1e-5) < whole - 0.05
    assert accountant.epsilon(SampledWithoutReplacementDpEvent(3000, 300, search), 1e-5) < whole - 0.05
    assert plan.candidates[0].final == {"eps": plan.eps0, "clip": 1.0}


def test_the_subsample_is_drawn_by_the_selection_generator_not_the_config_seed(tmp_path):
    """The amplification holds only while the subsample stays secret: it comes from the selection's generator
    (AES keyed by the OS under `randomness: os`), so two generators give two subsamples under one config."""
    from dptradeoff.release.run import private_data, search_rows

    settings, problem = _settings({"private": "subsampled", "subsample": 0.3}), _problem()
    private = private_data(problem, settings, _data(tmp_path))
    rows = [search_rows(problem, private, settings, Accountant(), np.random.default_rng(seed)) for seed in (1, 2, 1)]
    first, second, again = (np.sort(np.r_[r.training.x_train[:, 0], r.validation.x_test[:, 0]]) for r in rows)
    assert len(first) == 900 and not np.array_equal(first, second) and np.array_equal(first, again)
    assert rows[0].final.n_train == 3000   # the chosen setting trains on every private row


def test_the_private_tuning_config():
    from dptradeoff.config import SCHEMA, check

    with open("config/config.yaml") as f:
        default = yaml.safe_load(f)
    for tuning, expected in (("private", SubsampledTuning(32, 0.1)), ({"private": "prior"}, PriorTuning(32)),
                             ({"private": "subsampled", "subsample": 0.25, "candidates": 8}, SubsampledTuning(8, 0.25))):
        config = copy.deepcopy(default)
        config["release"]["tuning"] = tuning
        check(config, SCHEMA)
        settings = ReleaseSettings.from_config(config)
        assert settings.tuning == expected and settings.tuning_problem is None
        assert "adult-logreg-sgd-tuning" not in config["problems"]   # no rows given up, no tuning study
    config = copy.deepcopy(default)
    config["release"]["tuning"] = {"private": "prior", "subsample": 0.2}
    with pytest.raises(UserError, match=r"release.tuning.subsample is set, but the private tuning is prior"):
        check(config, SCHEMA)
