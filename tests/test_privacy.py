"""Every privacy number against an independent computation."""
from __future__ import annotations

import math
import subprocess
import sys

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from scipy import optimize, stats

from dptradeoff import UserError
from dptradeoff.privacy import dpsgd, gaussian, svt


# --- DP-SGD: subsampled Gaussian without replacement, replace-one ---------------------------

def test_classic_conversion_recomputed_by_hand_from_the_rdp_curve():
    n, m, epochs, z, delta = 32561, 256, 10, 1.0, 1e-5
    curve = dpsgd.rdp_curve(n, m, z, dpsgd.steps(n, m, epochs))
    by_hand = min(r + math.log(1 / delta) / (a - 1) for a, r in zip(dpsgd.ORDERS, curve))
    assert dpsgd.epsilon(n, m, epochs, z, delta, "classic") == pytest.approx(by_hand, rel=1e-12)
    # dp_accounting's conversion is tighter than the classic one, never looser.
    assert dpsgd.epsilon(n, m, epochs, z, delta) < by_hand


def test_rdp_curve_matches_autodp_theorem_27():
    """autodp (the library the original DPareto used) implements WBK19 Thm 27 independently."""
    from autodp import rdp_acct, rdp_bank

    for n, m, z, steps in [(32561, 256, 1.0, 1270), (60000, 16, 2.0, 5000), (1000, 100, 0.7, 30)]:
        acct = rdp_acct.anaRDPacct()
        acct.compose_subsampled_mechanism(lambda a, z=z: rdp_bank.RDP_gaussian({"sigma": z}, a), m / n,
                                          coeff=steps, improved_bound_flag=True)
        orders = [2.0, 3.0, 4.0, 8.0, 16.0, 32.0]
        ours = dpsgd.rdp_curve(n, m, z, steps, orders)
        theirs = acct.get_rdp(orders)
        assert ours == pytest.approx(theirs, rel=1e-6)


def test_classic_epsilon_close_to_autodp_continuous_optimum():
    from autodp import rdp_acct, rdp_bank

    n, m, epochs, z, delta = 32561, 128, 20, 1.1, 1e-5
    acct = rdp_acct.anaRDPacct()
    acct.compose_subsampled_mechanism(lambda a: rdp_bank.RDP_gaussian({"sigma": z}, a), m / n,
                                      coeff=dpsgd.steps(n, m, epochs), improved_bound_flag=True)
    theirs = acct.get_eps(delta)
    ours = dpsgd.epsilon(n, m, epochs, z, delta, "classic")
    # Our order grid is discrete, autodp optimises over all orders: ours may only be (slightly) larger.
    assert theirs * (1 - 1e-6) <= ours <= theirs * 1.03


@pytest.mark.parametrize("z", [0.6, 1.0, 2.0, 5.0, 16.0])
@pytest.mark.parametrize("n, m, epochs", [(60000, 16, 400), (32561, 256, 10), (32561, 8, 1), (32561, 512, 64)])
def test_matches_dp_accounting_with_its_default_orders(n, m, epochs, z):
    def reference(orders):
        accountant = rdp.RdpAccountant(orders, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        event = dp_accounting.SampledWithoutReplacementDpEvent(n, m, dp_accounting.GaussianDpEvent(z))
        accountant.compose(dp_accounting.SelfComposedDpEvent(event, dpsgd.steps(n, m, epochs)))
        return accountant.get_epsilon(1e-5)

    ours = dpsgd.epsilon(n, m, epochs, z, 1e-5)
    # Never materially looser than dp_accounting's default orders ...
    assert ours <= 1.02 * reference(None)
    # ... and never tighter than the best over all orders of both sets (it is a valid bound).
    every_order = sorted(set(rdp.DEFAULT_RDP_ORDERS) | set(dpsgd.ORDERS) | set(dpsgd.HIGH_ORDERS))
    assert ours >= reference(every_order) * (1 - 1e-9)


def test_full_batch_reduces_to_the_plain_gaussian_mechanism():
    n, z, epochs, delta = 1000, 4.0, 9, 1e-5
    orders = np.array(dpsgd.ORDERS)
    curve = dpsgd.rdp_curve(n, n, z, dpsgd.steps(n, n, epochs), tuple(orders))
    assert curve == pytest.approx(epochs * orders / (2 * z**2), rel=1e-12)
    # T Gaussian steps = one Gaussian with noise z / sqrt(T): the exact (analytic) epsilon is a lower bound.
    exact = gaussian.epsilon(z / math.sqrt(epochs), 1.0, delta)
    eps = dpsgd.epsilon(n, n, epochs, z, delta)
    assert exact <= eps <= 1.3 * exact


def test_monotone_in_epochs_lot_size_and_noise():
    base = dict(n=32561, lot_size=128, epochs=8, noise=1.5, delta=1e-5)
    eps = lambda **kw: dpsgd.epsilon(**{**base, **kw})
    assert eps(epochs=4) < eps(epochs=8) < eps(epochs=16)
    assert eps(lot_size=32) < eps(lot_size=128) < eps(lot_size=512)
    assert eps(noise=3.0) < eps(noise=1.5) < eps(noise=0.8)


@pytest.mark.parametrize("noise", [0.0, 1e-12])
def test_vanishing_noise_gives_infinite_epsilon_not_a_crash(noise):
    eps = dpsgd.epsilon(32561, 256, 10, noise, 1e-5)
    assert eps == math.inf or eps > 1e6


def test_bad_privacy_inputs_are_clear_errors():
    with pytest.raises(UserError, match="lot size"):
        dpsgd.epsilon(100, 200, 1, 1.0, 1e-5)
    with pytest.raises(UserError, match="delta"):
        dpsgd.epsilon(100, 10, 1, 1.0, 0.0)
    with pytest.raises(UserError, match="conversion"):
        dpsgd.epsilon(100, 10, 1, 1.0, 1e-5, "magic")


def test_command_line_prints_epsilon_last():
    done = subprocess.run([sys.executable, "-m", "dptradeoff", "epsilon", "--n", "32561", "--lot-size", "256",
                           "--epochs", "10", "--noise", "1.0", "--delta", "1e-5"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip().splitlines()[-1]) == pytest.approx(dpsgd.epsilon(32561, 256, 10, 1.0, 1e-5))


# --- Analytic Gaussian mechanism --------------------------------------------------------------

def _balle_wang_delta(eps, sigma, sens=1.0):
    """delta(eps) of the Gaussian mechanism, Balle & Wang 2018 Thm 8."""
    a, b = sens / (2 * sigma), eps * sigma / sens
    return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)


def test_analytic_gaussian_known_value():
    assert gaussian.epsilon(1.0, 1.0, 1e-6) == pytest.approx(4.886554117, abs=1e-8)


@pytest.mark.parametrize("sigma, sens, delta", [(0.5, 1.0, 1e-6), (2.0, 1.0, 1e-5), (3.0, 0.25, 1e-6), (10.0, 2.0, 1e-3)])
def test_analytic_gaussian_against_a_root_finder(sigma, sens, delta):
    root = optimize.brentq(lambda e: _balle_wang_delta(e, sigma, sens) - delta, 0.0, 500.0, xtol=1e-12)
    assert gaussian.epsilon(sigma, sens, delta) == pytest.approx(root, rel=1e-6, abs=1e-9)


def test_analytic_gaussian_zero_noise_is_infinite():
    assert gaussian.epsilon(0.0, 1.0, 1e-6) == math.inf


# --- Sparse vector technique ------------------------------------------------------------------

@pytest.mark.parametrize("bound, b", [(1, 1.0), (10, 3.0), (30, 0.01), (7, 100.0)])
def test_svt_closed_form_equals_eps1_plus_eps2_of_lyu_alg7(bound, b):
    b1, b2 = svt.noise_split(b, bound)
    eps1, eps2 = 1 / b1, 2 * bound / b2  # Lap(Delta/eps1) on the threshold, Lap(2 C Delta/eps2) per query
    assert svt.epsilon(bound, b) == pytest.approx(eps1 + eps2, rel=1e-12)
