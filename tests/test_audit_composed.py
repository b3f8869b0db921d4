"""The composed-step bound of the white-box audits (audit/composed.py): its accountant against closed forms and
an independent discretisation, its estimator on simulated mechanisms of known epsilon, and the planted bugs at
a subsampled point of the real linear trainer."""
import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution
from scipy import stats

from dptradeoff.audit import bounds, composed, whitebox
from dptradeoff.privacy import dpsgd
from dptradeoff.train.hyper import DPSGDHyper

DELTA = 1e-5


@pytest.mark.parametrize("contribution, noise_std, steps", [(1.0, 4.0, 10), (0.5, 3.0, 50)])
def test_full_batch_composition_is_the_gaussian_mechanisms_closed_form(contribution, noise_std, steps):
    # q = 1: T steps of N(0, s^2) against N(2c, s^2) are mu-GDP with mu = 2 c sqrt(T) / s, exactly
    exact = bounds.gdp_epsilon(2 * contribution * math.sqrt(steps) / noise_std, DELTA)
    low = composed.composed_epsilon(1.0, contribution, noise_std, steps, DELTA)
    high = composed.composed_epsilon(1.0, contribution, noise_std, steps, DELTA, optimistic=False)
    assert low <= exact <= high and high - low < 0.02, (low, exact, high)


def _binned_epsilon(rate, contribution, noise_std, steps):
    """The same step, binned on a grid of the release (a post-processing, so never above the step's epsilon) and
    turned into a PLD from its two probability mass functions: a route that shares nothing with dp_accounting's
    subsampled Gaussian."""
    edges = np.concatenate([[-np.inf], np.arange(-12 * noise_std, 12 * noise_std + 2 * contribution, noise_std / 200),
                            [np.inf]])
    base = np.diff(stats.norm.cdf(edges, 0.0, noise_std))
    mixed = (1 - rate) * base + rate * np.diff(stats.norm.cdf(edges, 2 * contribution, noise_std))
    keep = (base > 0) & (mixed > 0)
    logs = [{i: math.log(v) for i, v in enumerate(p) if keep[i]} for p in (mixed, base)]
    epsilons = []
    for upper, lower in (logs, logs[::-1]):
        pld = privacy_loss_distribution.from_two_probability_mass_functions(upper, lower, pessimistic_estimate=False,
                                                                            value_discretization_interval=1e-4)
        epsilons.append(pld.self_compose(steps).get_epsilon_for_delta(DELTA))
    return max(epsilons)


def test_subsampled_composition_matches_an_independent_discretisation():
    rate, contribution, noise_std, steps = 0.05, 1.0, 6.0, 100
    binned = _binned_epsilon(rate, contribution, noise_std, steps)
    low = composed.composed_epsilon(rate, contribution, noise_std, steps, DELTA)
    high = composed.composed_epsilon(rate, contribution, noise_std, steps, DELTA, optimistic=False)
    assert binned <= high and abs(low - binned) < 0.02 * binned, (low, binned, high)


def _simulated(rate, contribution, noise_std, steps, trainings, rng, recorded=True):
    """Releases of the mechanism the module doc describes, drawn directly: K ~ Bernoulli(q), +-c by hypothesis."""
    counts = (rng.random((trainings, steps)) < rate).astype(np.int64)
    signs = np.repeat([1.0, -1.0], trainings // 2)[:, None]
    noise = rng.normal(0.0, noise_std, (trainings, steps))
    return composed.StepObservations(counts * signs * contribution + noise, counts, signs, noise if recorded else None)


@pytest.mark.slow
def test_the_estimator_on_simulated_mechanisms_stays_below_their_exact_epsilon_and_near_it():
    # Adult's lots of 1,024 at proven epsilon 2 (z = 3.125), 1,000 trainings a side, 40 seeds
    rate, contribution, noise_std, steps = 1024 / 21708, 1.0, 6.25, 210
    exact = composed.composed_epsilon(rate, contribution, noise_std, steps, DELTA, optimistic=False)
    found = np.array([composed.composed_bound(_simulated(rate, contribution, noise_std, steps, 2000,
                                                         np.random.default_rng(seed)), DELTA)[0].epsilon_lb
                      for seed in range(40)])
    assert np.mean(found <= exact) >= 0.95 and np.median(found) >= 0.7 * exact, (found, exact)


def test_a_noise_record_never_raises_the_bound_and_a_biased_one_is_flagged():
    # the record is checked, never used: halved, or biased against the canary's sign on the steps that draw it
    # (which, subtracted, would inflate the contribution past the clip), the bound is the honest record's, and
    # without a record the same
    rng = np.random.default_rng(3)
    rate, contribution, noise_std, steps = 0.1, 1.0, 2.0, 40
    honest = _simulated(rate, contribution, noise_std, steps, 400, rng)
    drawn = (honest.counts > 0) * honest._signs()
    records = {"halved": honest.noise / 2, "biased": honest.noise - 0.5 * drawn, "none": None}
    exact = composed.composed_epsilon(rate, contribution, noise_std, steps, DELTA, optimistic=False)
    truthful, truthful_steps = composed.composed_bound(honest, DELTA)
    assert truthful.epsilon_lb <= exact and truthful_steps.record_agrees
    for name, record in records.items():
        seen = composed.StepObservations(honest.releases, honest.counts, honest.signs, record)
        bound, step = composed.composed_bound(seen, DELTA)
        assert bound.epsilon_lb == truthful.epsilon_lb, name
        assert step.record_agrees is (None if record is None else False), name
        broken = composed.premise_bounds(seen).broken_premises(noise_std, rate, contribution)
        assert not any(b.startswith("the canary contributes") for b in broken), (name, broken)
        assert any(b.startswith("the trainer's noise record disagrees") for b in broken) == (record is not None), name


def _adult_like(n=400, d=20, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, d)) < 0.2).astype(np.float32)
    y = np.where(x[:, 0] + rng.normal(0, 0.3, n) > 0.2, 1.0, -1.0)
    return x, y


CLAIMED = DPSGDHyper(5, 40, 0.1, 1.0, 1.0)   # lots of 40 of 401 rows: subsampled, q ~ 0.1, 50 steps
BUGS = {"none": (CLAIMED, 1, set()),
        "noise halved": (DPSGDHyper(5, 40, 0.1, 0.5, 1.0), 1, {"noise"}),
        "clipping removed": (DPSGDHyper(5, 40, 0.1, 1e-3, 1000.0), 1, {"contribution"}),
        "noise divided by sqrt(lot)": (DPSGDHyper(5, 40, 0.1, 1.0 / math.sqrt(40), 1.0), 1, {"noise"}),
        "canary's row drawn twice as often": (CLAIMED, 2, {"rate"})}


@pytest.mark.parametrize("bug", list(BUGS))
def test_each_planted_bug_at_a_subsampled_point_breaks_the_premise_it_breaks(bug):
    trained_hp, copies, expected = BUGS[bug]
    x, y = _adult_like()
    n = len(y) + 1
    trained = whitebox.train_and_score(x, y, "logistic", "sgd", trained_hp, 150, np.random.default_rng(5),
                                       model=CLAIMED, copies=copies)
    quoted, _ = composed.composed_bound(trained.seen, DELTA)
    broken = composed.premise_bounds(trained.seen).broken_premises(2 * CLAIMED.clip * CLAIMED.noise,
                                                                   CLAIMED.lot_size / n, CLAIMED.clip)
    found = {word for word in ("noise", "rate", "contribution") for sentence in broken
             if sentence.startswith({"noise": "the noise", "rate": "lots draw", "contribution": "the canary contributes"}[word])}
    assert found == expected, broken
    claimed = dpsgd.epsilon(n, CLAIMED.lot_size, CLAIMED.epochs, CLAIMED.noise, DELTA)
    if bug == "none":
        assert 0.3 * claimed < quoted.epsilon_lb <= claimed, (quoted, claimed)
    if bug in ("clipping removed", "noise divided by sqrt(lot)"):
        assert quoted.epsilon_lb > claimed, (quoted, claimed)
