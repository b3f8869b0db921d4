"""The accountant and its events: every epsilon the pipeline computes equals, bit for bit, what the
code before the accountant computed (tests/privacy_values.json, recorded from commit d25db2f),
through the functions callers import and through the accountant itself; every event the accountant
analyses gives a finite epsilon >= 0 that falls as the noise grows (dp_accounting's accountant
contract); and the events are dp_accounting's own, which its accountant accepts."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp

import privacy_values
from dptradeoff import UserError
from dptradeoff.privacy import calibration, composition, dpsgd, events, svt
from dptradeoff.privacy.accountant import PLDAccountant, ORDERS, Accountant
from dptradeoff.privacy.conversions import CLASSIC, CONVERSIONS, IMPROVED, conversion_named, rdp_to_dp
from dptradeoff.privacy.events import (ComposedDpEvent, EpsilonDpEvent, GaussianDpEvent, LaplaceDpEvent,
                                       ObjectivePerturbationDpEvent, OutputPerturbationDpEvent, RandomChoiceDpEvent,
                                       RepeatAndSelectDpEvent, SampledWithoutReplacementDpEvent, SelfComposedDpEvent,
                                       SparseVectorDpEvent)
from dptradeoff.problems import PROBLEMS


@pytest.fixture(scope="module")
def recorded():
    return json.loads((Path(__file__).parent / "privacy_values.json").read_text())


class as_stored:
    """Values as stored (after a JSON round trip), equal to others within privacy_values.RELATIVE_TOLERANCE."""
    def __init__(self, values):
        self.values = json.loads(json.dumps(values))

    def __eq__(self, other):
        return privacy_values._same(self.values, other.values)

    def __repr__(self):
        return json.dumps(self.values)


def test_every_epsilon_is_what_it_was_before_the_accountant(recorded):
    """The public functions (dpsgd.epsilon, calibrate_noise, the baselines, the filter, propose-test's
    accounting, the oracles, ...) over the recorded grid: equal bit for bit."""
    now = privacy_values.values()
    assert set(now) == set(recorded)
    assert privacy_values.differences(recorded, now) == []


@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_the_accountant_gives_the_recorded_dpsgd_epsilons(recorded, conversion):
    accountant = Accountant(conversion_named(conversion))
    ours = [accountant.epsilon(dpsgd.training_event(n, lot, e, z), delta)
            for n, lot, e, z, delta in privacy_values.dpsgd_runs(False)]
    assert as_stored(ours) == as_stored(recorded[f"dpsgd.epsilon[{conversion}]"])
    calibrated = []
    for n, lot, e, target, delta in privacy_values.calibrations(False):
        steps = dpsgd.steps(n, lot, e)

        def event_at(z):
            return SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, lot, GaussianDpEvent(z)), steps)

        cal = calibration.calibrate_noise(accountant, event_at, target, delta)
        calibrated.append(None if cal is None else [cal.noise, cal.epsilon])
    assert as_stored(calibrated) == as_stored(recorded[f"dpsgd.calibrate_noise[{conversion}]"])


def test_the_accountant_gives_the_recorded_closed_forms(recorded):
    accountant = Accountant()
    outpert = [accountant.epsilon(OutputPerturbationDpEvent(g, s, n), d)
               for g, s, n, d in privacy_values.output_perturbations(False)]
    assert as_stored(outpert) == as_stored(recorded["outpert.epsilon"])
    releases = privacy_values.gaussian_releases(False)
    gaussian = [accountant.epsilon(GaussianDpEvent(s), d) for s, sens, d in releases if sens == 1.0]
    assert as_stored(gaussian) == as_stored([eps for (_, sens, _), eps in zip(releases, recorded["gaussian.epsilon"])
                                             if sens == 1.0])
    svt = [accountant.epsilon(SparseVectorDpEvent(c, b), 0.0) for c, b in privacy_values.sparse_vectors(False)]
    assert as_stored(svt) == as_stored(recorded["svt.epsilon"])
    noises = recorded["objective_perturbation.noise_parameters"]
    objective = [accountant.epsilon(ObjectivePerturbationDpEvent(beta, extra, n, lam, c), 0.0)
                 for (beta, extra, _, _), (_, n, lam, c) in zip(noises, privacy_values.objective_perturbations(False))]
    assert as_stored(objective) == as_stored(recorded["objective_perturbation.privacy_loss"])


def test_the_accountant_gives_the_recorded_compositions(recorded):
    """Propose-test's T eps0-DP tests (advanced composition at delta'), Lemma 7 (the classic conversion
    at one order) and Papernot-Steinke's repeat-and-select of a random choice among DP-SGD runs."""
    tuning = [Accountant().epsilon(SelfComposedDpEvent(EpsilonDpEvent(eps0), t), delta)
              for eps0, t, delta in privacy_values.PROPOSE_TEST]
    assert as_stored(tuning) == as_stored(recorded["accounting.advanced_composition"])
    lemma7 = [CLASSIC.epsilon([alpha], [eps_rdp], delta)[0] for eps_rdp, alpha, delta in privacy_values.LEMMA7]
    assert as_stored(lemma7) == as_stored(recorded["filter.rdp_to_dp"])
    orders = sorted(set(ORDERS) | {privacy_values.PS_ORDER})
    runs = [dpsgd.training_event(n, lot, e, z) for n, lot, e, z in privacy_values.PS_RUNS]
    repeated = [Accountant().rdp(RepeatAndSelectDpEvent(inner, mean, eta), orders)
                for inner in [*runs, RandomChoiceDpEvent(tuple(runs))] for eta, mean in privacy_values.PS_REPETITIONS]
    assert as_stored([list(r) for r in repeated]) == as_stored(recorded["baselines.papernot_steinke_rdp"])


# --- the contract of every event the accountant analyses ------------------------------------------

def _sampled(z):
    return SampledWithoutReplacementDpEvent(1000, 50, GaussianDpEvent(z))


# Each: noise -> event, more noise = more privacy.
EVENTS = {
    "Gaussian": lambda z: GaussianDpEvent(z),
    "Laplace": lambda b: LaplaceDpEvent(b),
    "pure epsilon": lambda b: EpsilonDpEvent(1 / b),
    "SVT": lambda b: SparseVectorDpEvent(5, 10 * b),
    "output perturbation": lambda s: OutputPerturbationDpEvent(0.01, s, 30000),
    "objective perturbation": lambda s: ObjectivePerturbationDpEvent(1 / s, 0.0, 1000, 1e-3, 0.25),
    "sampled Gaussian": _sampled,
    "DP-SGD run": lambda z: dpsgd.training_event(1000, 50, 5, z),
    "pure epsilon, 20 times": lambda b: SelfComposedDpEvent(LaplaceDpEvent(b), 20),
    "pure-DP sequence": lambda b: ComposedDpEvent([LaplaceDpEvent(b), SparseVectorDpEvent(3, 10 * b)]),
    "RDP sequence": lambda z: ComposedDpEvent([GaussianDpEvent(4 * z), SelfComposedDpEvent(_sampled(z), 30)]),
    "random choice": lambda z: RandomChoiceDpEvent((SelfComposedDpEvent(_sampled(z), 30), _sampled(z / 2))),
    "repeat and select": lambda z: RepeatAndSelectDpEvent(SelfComposedDpEvent(_sampled(z), 30), 5.0, 1.0),
    "Poisson-sampled Gaussian run": lambda z: SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.05, GaussianDpEvent(z)), 100),
}


@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize("name", EVENTS)
def test_every_event_gives_a_finite_epsilon_that_falls_as_the_noise_grows(name, conversion):
    accountant = Accountant(conversion_named(conversion))
    eps = [accountant.epsilon(EVENTS[name](noise), 1e-5) for noise in (0.7, 1.0, 1.5, 2.5, 4.0)]
    assert all(math.isfinite(e) and e >= 0 for e in eps), eps
    assert all(a > b for a, b in zip(eps, eps[1:])), eps
    assert accountant.epsilon_at_all_orders(EVENTS[name](1.0), 1e-5) <= eps[1] * (1 + 1e-12)


@pytest.mark.parametrize("name", ["RDP sequence", "random choice", "repeat and select", "DP-SGD run"])
def test_the_classic_conversion_is_never_below_dp_accountings(name):
    for noise in (0.7, 1.5, 4.0):
        event = EVENTS[name](noise)
        assert Accountant(CLASSIC).epsilon(event, 1e-5) >= Accountant(IMPROVED).epsilon(event, 1e-5)


def test_composition_rules():
    """count x RDP, the sum over a sequence, the largest of a random choice; pure epsilons add up, and
    a pure-DP mechanism run T times is charged advanced composition at the delta asked for."""
    accountant, sampled = Accountant(), _sampled(1.3)
    once = accountant.rdp(sampled)
    np.testing.assert_array_equal(accountant.rdp(SelfComposedDpEvent(sampled, 7)), 7 * once)
    np.testing.assert_array_equal(accountant.rdp(ComposedDpEvent([sampled, GaussianDpEvent(2.0)])),
                                  once + accountant.rdp(GaussianDpEvent(2.0)))
    np.testing.assert_array_equal(accountant.rdp(RandomChoiceDpEvent((sampled, _sampled(0.9)))),
                                  accountant.rdp(_sampled(0.9)))
    assert accountant.epsilon(ComposedDpEvent([LaplaceDpEvent(2.0), EpsilonDpEvent(0.25)]), 1e-5) == 0.75
    assert accountant.epsilon(SelfComposedDpEvent(EpsilonDpEvent(0.1), 100), 1e-6) == \
        composition.advanced_composition(0.1, 100, 1e-6) < 100 * 0.1
    assert accountant.epsilon(SelfComposedDpEvent(EpsilonDpEvent(1.0), 3), 1e-6) == 3.0   # basic, when smaller


def test_rdp_to_dp_is_the_classic_conversion_at_one_order():
    for eps_rdp, alpha, delta in privacy_values.LEMMA7:
        assert rdp_to_dp(eps_rdp, alpha, delta) == CLASSIC.epsilon([alpha], [eps_rdp], delta)[0]


def test_unanalysed_events_and_bad_inputs_are_one_sentence_errors():
    accountant = Accountant()
    for event in (dp_accounting.PoissonSampledDpEvent(0.01, LaplaceDpEvent(1.0)),
                  SampledWithoutReplacementDpEvent(100, 10, SparseVectorDpEvent(3, 10.0)),
                  ComposedDpEvent([GaussianDpEvent(1.0), SparseVectorDpEvent(3, 10.0)])):   # SVT: no RDP
        with pytest.raises(UserError, match="no analysis of .*DpEvent; describe the mechanism"):
            accountant.epsilon(event, 1e-5)
    # any mechanism with an RDP curve, sampled without replacement: WBK19 Thm 9 (tests/test_private_tuning.py)
    sampled = accountant.epsilon(SampledWithoutReplacementDpEvent(100, 10, LaplaceDpEvent(1.0)), 1e-5)
    assert 0 < sampled < accountant.epsilon(ComposedDpEvent([LaplaceDpEvent(1.0)]), 1e-5)
    with pytest.raises(UserError, match="delta must be in"):
        accountant.epsilon(dpsgd.training_event(100, 10, 1, 1.0), 0.0)
    with pytest.raises(UserError, match="lot size"):
        accountant.epsilon(dpsgd.training_event(100, 200, 1, 1.0), 1e-5)
    with pytest.raises(UserError, match="Unknown RDP conversion 'magic'; use one of dp_accounting, classic"):
        conversion_named("magic")


# --- the events are dp_accounting's ----------------------------------------------------------------

def test_events_are_dp_accountings_own_classes_and_its_accountant_agrees():
    """The same example as docs/oracles.md: dp_accounting's RDP accountant, given our very event, is
    close to ours (it evaluates WBK19 Thm 27 in float64, accurate at this setting)."""
    assert events.GaussianDpEvent is dp_accounting.GaussianDpEvent
    assert events.SampledWithoutReplacementDpEvent is dp_accounting.SampledWithoutReplacementDpEvent
    run = dpsgd.training_event(32561, 256, 10, 1.0)
    theirs = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE).compose(run)
    assert Accountant().epsilon(run, 1e-5) == pytest.approx(theirs.get_epsilon(1e-5), rel=1e-6)
    assert Accountant().epsilon(run, 1e-5) == pytest.approx(3.1042319, abs=1e-7)
    assert Accountant(CLASSIC).epsilon(run, 1e-5) == pytest.approx(3.5827009, abs=1e-7)


def test_gaussian_compositions_and_repeat_and_select_agree_with_dp_accounting():
    orders = [1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    for event in (ComposedDpEvent([GaussianDpEvent(2.0), SelfComposedDpEvent(GaussianDpEvent(3.0), 4)]),
                  RepeatAndSelectDpEvent(SelfComposedDpEvent(GaussianDpEvent(5.0), 10), 8.0, 1.0)):
        theirs = rdp.RdpAccountant(orders, dp_accounting.NeighboringRelation.REPLACE_ONE).compose(event)._rdp
        ours = np.minimum.accumulate(Accountant().rdp(event, orders)[::-1])[::-1]   # RDP is non-decreasing in the order
        np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_a_poisson_sampled_gaussian_is_dp_accountings_own_rdp():
    """Add/remove-one, as dp_accounting (and Opacus) analyse Poisson sampling (docs/release.md)."""
    orders = [1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    event = SelfComposedDpEvent(events.PoissonSampledDpEvent(0.02, GaussianDpEvent(1.3)), 500)
    theirs = rdp.RdpAccountant(orders).compose(event)._rdp
    np.testing.assert_allclose(Accountant().rdp(event, orders), theirs, rtol=1e-12)
    assert Accountant().epsilon(event, 1e-5) == pytest.approx(rdp.RdpAccountant().compose(event).get_epsilon(1e-5),
                                                             rel=0.02)


def test_the_accountant_does_not_import_dp_accountings_package():
    """Loading its events costs nothing: dp_accounting's __init__ (scipy.signal, scipy.stats) is not run."""
    code = ("import sys; import dptradeoff.privacy.accountant, dptradeoff.privacy.dpsgd, dptradeoff.problems.builtin; "
            "print(sorted(m for m in sys.modules if m.startswith('dp_accounting')), 'scipy.signal' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['dp_accounting.dp_event']", "False"]


def test_the_configs_conversion_reaches_the_oracles_accountant():
    problem = PROBLEMS["adult-logreg-sgd"].with_conversion("classic")
    assert problem.oracle.accountant == Accountant(CLASSIC) and problem.oracle.conversion == "classic"
    assert PROBLEMS["adult-logreg-sgd"].oracle.conversion == "pld"   # the tight accountant by default
    assert isinstance(PROBLEMS["adult-logreg-sgd"].with_conversion("pld").oracle.accountant, PLDAccountant)
    assert PROBLEMS["svt"].with_conversion("classic").oracle.conversion is None   # SVT's epsilon has no RDP
    with pytest.raises(UserError, match="Unknown RDP conversion"):
        PROBLEMS["adult-logreg-sgd"].with_conversion("magic")


def test_pure_dp_compositions_at_delta_zero_and_nested():
    accountant = Accountant()
    assert accountant.epsilon(SelfComposedDpEvent(EpsilonDpEvent(0.1), 100), 0.0) == 100 * 0.1   # basic: delta 0
    nested = ComposedDpEvent([SelfComposedDpEvent(LaplaceDpEvent(4.0), 3), SparseVectorDpEvent(1, 10.0)])
    assert accountant.epsilon(nested, 0.0) == 3 * 0.25 + svt.epsilon(1, 10.0)


@pytest.mark.parametrize("description", [
    {"event": "SelfComposedDpEvent", "count": -3, "inner": {"event": "GaussianDpEvent", "noise_multiplier": 1.0}},
    {"event": "SelfComposedDpEvent", "count": 2.5, "inner": {"event": "EpsilonDpEvent", "epsilon": 1.0}},
    {"event": "EpsilonDpEvent", "epsilon": -1.0},
    {"event": "EpsilonDpEvent", "epsilon": float("nan")},
    {"event": "ComposedDpEvent", "events": [{"event": "GaussianDpEvent", "noise_multiplier": 2.0},
                                            {"event": "LaplaceDpEvent", "noise_multiplier": -1.0}]},
    {"event": "PoissonSampledDpEvent", "sampling_probability": 1.5,
     "inner": {"event": "GaussianDpEvent", "noise_multiplier": 1.0}},
])
def test_an_event_no_mechanism_has_stops_instead_of_lowering_epsilon(description):
    """A negative count once gave epsilon 0 (count x RDP), a negative epsilon -1: both refused."""
    from dptradeoff.privacy.descriptions import event_from_description

    event = event_from_description(description)
    for analyse in (lambda: Accountant().epsilon(event, 1e-5), lambda: Accountant().rdp(event),
                    lambda: Accountant().epsilon_at_all_orders(event, 1e-5)):
        with pytest.raises(UserError, match="which no mechanism has|give a whole number of runs"):
            analyse()
