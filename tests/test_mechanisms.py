"""The DP-SGD / DP-Adam mechanism of the trainers, as `dpsgd` accounts for it (issue 38, item 5):
N(0, (2 L z)^2) on every parameter tensor's clipped gradient sum (biases included), the noised
average alone fed to SGD or to both of Adam's moments, exactly `dpsgd.steps(n, m, epochs)` steps,
each on a lot of m distinct examples drawn uniformly, afresh every step.

The torch trainers (mlp.py, cnn.py) are rerun by a naive reference fed the lots and the normal draws
they used (recorded by wrapping `clipped_gradient_sum` and `torch.randn`); the noise scale is also
checked statistically, tensor by tensor, where the gradient is zero. The linear trainer's lots are
checked subset by subset, and pair of consecutive lots by pair: a biased swap in its partial
Fisher-Yates shuffle fails one or the other by far."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from dptradeoff.privacy import dpsgd
from dptradeoff.train import cnn, linear, mlp
from dptradeoff.train.hyper import ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, DPSGDHyper

P_MIN = 1e-6   # a correct mechanism fails a statistical check below with probability about this (fixed seeds)
CLIPPED_SUM = {mlp: mlp.clipped_gradient_sum, cnn: cnn.clipped_gradient_sum}   # the real ones, for the references


class _Recorder:
    """Wraps `module.clipped_gradient_sum` (recording each lot as row indices, identified from the rows
    the trainer passes, and its clip and dropout masks) and `torch.randn` (recording every draw, before
    the trainer scales it in place). `zero`: the wrapped sum returns zero gradients instead."""

    def __init__(self, monkeypatch, module, rows: np.ndarray, y: np.ndarray, zero: bool = False):
        self.lots, self.clips, self.masks, self.draws = [], [], [], []
        where = {row.tobytes(): i for i, row in enumerate(rows)}
        assert len(where) == len(rows), "rows must be distinct to identify the lots"
        real_sum, real_randn = CLIPPED_SUM[module], torch.randn

        def record(x, yb, clip, masks=None):
            lot = np.array([where.get(row.tobytes(), -1) for row in x.detach().cpu().numpy()])
            assert lot.min() >= 0, "the trainer passed a row that is not one of the training rows"
            np.testing.assert_array_equal(yb.cpu().numpy(), y[lot])
            self.lots.append(lot)
            self.clips.append(clip)
            self.masks.append(None if masks is None else tuple(mk.detach().clone() for mk in masks))

        if module is mlp:
            def wrapped(params, x, yb, clip):
                record(x, yb, clip)
                return ([torch.zeros_like(p) for p in params], torch.zeros(len(x))) if zero else real_sum(params, x, yb, clip)
        else:
            def wrapped(model, x, yb, masks, clip, chunk=cnn.CHUNK):
                record(x, yb, clip, masks)
                if zero:
                    return {k: torch.zeros_like(v) for k, v in model.named_parameters()}, torch.zeros(len(x))
                return real_sum(model, x, yb, masks, clip, chunk)

        def randn(*args, **kwargs):
            out = real_randn(*args, **kwargs)
            self.draws.append(out.detach().clone())
            return out

        monkeypatch.setattr(module, "clipped_gradient_sum", wrapped)
        monkeypatch.setattr(module, "device", lambda: torch.device("cpu"))
        monkeypatch.setattr(torch, "randn", randn)

    def draws_by_step(self, shapes):
        """The draws, one list per step of one draw per parameter tensor (shapes in parameter order)."""
        k = len(shapes)
        assert len(self.draws) == k * len(self.lots), (
            f"{len(self.draws)} normal draws for {len(self.lots)} steps of {k} parameter tensors: "
            "every tensor (biases included) needs its own noise at every step")
        steps = [self.draws[s:s + k] for s in range(0, len(self.draws), k)]
        for step in steps:
            assert [tuple(d.shape) for d in step] == [tuple(s) for s in shapes], "a draw per tensor, in parameter order"
        return steps


def _chi2_sf(statistic, dof):
    return float(stats.chi2.sf(statistic, dof))


def _normal_scale_error(name, moves: torch.Tensor, sigma: float):
    """None if moves ~ N(0, sigma^2) iid passes (sum (move/sigma)^2 ~ chi-square(N), two-sided at P_MIN;
    mean within 5.5 standard errors of 0), else what is wrong."""
    u = moves.double().flatten() / sigma
    q = float((u * u).sum())
    low, high = stats.chi2.ppf(P_MIN / 2, len(u)), stats.chi2.isf(P_MIN / 2, len(u))
    if not low < q < high:
        return f"{name}: noise std {math.sqrt(q / len(u)):.4g} x 2Lz/m (want 1) over {len(u)} draws"
    if abs(float(u.mean())) > 5.5 / math.sqrt(len(u)):
        return f"{name}: noise mean {float(u.mean()):.3g} x 2Lz/m"
    return None


def _assert_uniform_fresh_lots(lots, n, m):
    """m distinct indices per lot; inclusion counts as uniform m-subsets predict; consecutive lots overlap
    as often as independent m-subsets do (a shuffled epoch's would not)."""
    lots = np.array(lots)
    assert lots.ndim == 2 and lots.shape[1] == m and lots.min() >= 0 and lots.max() < n
    assert all(len(set(lot)) == m for lot in lots), "a lot repeats an example"
    member = np.zeros((len(lots), n))
    np.put_along_axis(member, lots, 1.0, axis=1)
    counts, expected = member.sum(axis=0), len(lots) * m / n
    # Pearson's statistic times the finite-population correction (n-1)/(n-m) is ~ chi-square(n-1)
    p = _chi2_sf(((counts - expected) ** 2 / expected).sum() * (n - 1) / (n - m), n - 1)
    assert p > P_MIN, f"inclusion counts not uniform: chi-square p = {p:.2g}"
    overlap = np.array([len(set(a) & set(b)) for a, b in zip(lots[:-1], lots[1:])])
    mean = m * m / n   # hypergeometric mean overlap of two independent m-subsets
    var = m * (m / n) * ((n - m) / n) * ((n - m) / (n - 1))
    assert abs(overlap.mean() - mean) < 5 * math.sqrt(var / len(overlap)), (
        f"consecutive lots overlap {overlap.mean():.3f} on average, independent ones {mean:.3f}")


# ---- MLP ------------------------------------------------------------------------------------------------

def _mlp_data(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 784)).astype(np.float32), rng.integers(0, 10, n)


def _mlp_reference(x, y, arch, optimizer, hp, seed, lots, draws):
    """Paper 001 Alg. 3/4 for the MLP in float64, with the given lots and standard normal draws:
    g = (clipped sum + 2 L z draw) / m for every tensor, then SGD, or Adam with both moments of g."""
    params = [p.double() for p in mlp.init_params(mlp.ARCHITECTURES[arch], torch.Generator().manual_seed(seed), "cpu")]
    mu, nu = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    xs, ys = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y)
    for t, (lot, step_draws) in enumerate(zip(lots, draws), start=1):
        grads, _ = CLIPPED_SUM[mlp]([p.requires_grad_(True) for p in params], xs[lot], ys[lot], hp.clip)
        params = [p.detach() for p in params]
        for k, (g, e) in enumerate(zip(grads, step_draws)):
            g = (g.detach() + 2 * hp.clip * hp.noise * e.double()) / hp.lot_size
            if optimizer == "sgd":
                params[k] = params[k] - hp.learning_rate * g
            else:
                mu[k] = ADAM_BETA1 * mu[k] + (1 - ADAM_BETA1) * g
                nu[k] = ADAM_BETA2 * nu[k] + (1 - ADAM_BETA2) * g * g
                params[k] = params[k] - hp.learning_rate * (mu[k] / (1 - ADAM_BETA1**t)) / (
                    torch.sqrt(nu[k] / (1 - ADAM_BETA2**t)) + ADAM_KAPPA)
    return params


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mlp_trainer_is_dpsgd_fed_its_lots_and_noise(monkeypatch, optimizer):
    """mlp.train's parameters equal the naive Alg. 3/4 rerun on the lots it used and the normal draws
    it made: one draw per tensor per step (biases included) scaled by 2 L z, added to the clipped sum,
    divided by m; Adam's first and second moments both of that noised average. The noise (2 L z = 3.6
    per coordinate) dwarfs the clipped sum (norm at most m L = 7.2 over all ~110,000 coordinates), so a
    wrong scale, a tensor without noise or a moment of the un-noised gradient is far off."""
    n, arch, seed = 24, "mlp2", 3
    x, y = _mlp_data(n)
    lr = 0.5 if optimizer == "sgd" else 0.01
    hp = DPSGDHyper(epochs=2, lot_size=6, learning_rate=lr, noise=1.5, clip=1.2)
    rec = _Recorder(monkeypatch, mlp, x, y)
    trained = mlp.train(x, y, arch, optimizer, hp, seed=seed)
    assert len(rec.lots) == dpsgd.steps(n, hp.lot_size, hp.epochs) == 8, f"{len(rec.lots)} steps, the accountant counts 8"
    assert rec.clips == [hp.clip] * len(rec.lots)
    draws = rec.draws_by_step([p.shape for p in trained])
    expected = _mlp_reference(x, y, arch, optimizer, hp, seed, rec.lots, draws)
    names = [f"{kind}{layer}" for layer in range(len(trained) // 2) for kind in ("W", "b")]
    errors = [(name, float((ours.double() - ref).abs().max()), 1e-5 + 1e-4 * float(ref.abs().max()))
              for name, ours, ref in zip(names, trained, expected)]
    assert all(err < tol for _, err, tol in errors), f"{optimizer}: off the reference by " + ", ".join(
        f"{name} {err:.3g}" for name, err, tol in errors if err >= tol)


def test_mlp_trainer_noise_is_2Lz_over_m_in_every_tensor(monkeypatch):
    """Zero gradients, n = m (one step an epoch, a checkpoint after each): every step moves every
    coordinate of every tensor, each bias included, by -lr N(0, (2 L z)^2) / m."""
    n, steps = 5, 40
    x, y = _mlp_data(n, seed=1)
    hp = DPSGDHyper(epochs=steps, lot_size=n, learning_rate=0.3, noise=0.9, clip=0.8)
    _Recorder(monkeypatch, mlp, x, y, zero=True)
    seen = []
    mlp.train(x, y, "mlp2", "sgd", hp, seed=7, checkpoint=lambda e, ps: seen.append([p.clone() for p in ps]))
    assert len(seen) == steps, f"{len(seen)} steps (checkpoints), the accountant counts {steps}"
    start = mlp.init_params(mlp.ARCHITECTURES["mlp2"], torch.Generator().manual_seed(7), "cpu")
    path = [start] + seen
    sigma = hp.learning_rate * 2 * hp.clip * hp.noise / hp.lot_size
    errors = [_normal_scale_error(f"layer {k // 2} {'bias' if k % 2 else 'weight'}",
                                  torch.stack([b[k] - a[k] for a, b in zip(path[:-1], path[1:])]), sigma)
              for k in range(len(start))]
    assert not any(errors), "; ".join(e for e in errors if e)


@pytest.mark.parametrize("optimizer,epochs", [("sgd", 100), ("adam", 7)])
def test_mlp_trainer_runs_the_lots_and_steps_dpsgd_accounts_for(monkeypatch, optimizer, epochs):
    """T = epochs * round(n/m) gradient steps (one noise draw per tensor each), each on m distinct
    examples, uniform and drawn afresh every step (checked over 300 lots with SGD)."""
    n, m = 20, 6   # round(20/6) = 3 steps an epoch (not 20 // 6 + 1 or ceil)
    x, y = _mlp_data(n, seed=2)
    rec = _Recorder(monkeypatch, mlp, x, y, zero=True)
    trained = mlp.train(x, y, "mlp2", optimizer, DPSGDHyper(epochs, m, 0.01, 1.0, 1.0), seed=0)
    assert len(rec.lots) == dpsgd.steps(n, m, epochs) == 3 * epochs, f"{len(rec.lots)} steps, the accountant counts {3 * epochs}"
    rec.draws_by_step([p.shape for p in trained])
    if optimizer == "sgd":
        _assert_uniform_fresh_lots(rec.lots, n, m)


# ---- CNN ------------------------------------------------------------------------------------------------

def test_cnn_trainer_is_dpsgd_fed_its_lots_and_noise(monkeypatch):
    """cnn.train's parameters equal naive DP-SGD rerun (float64) on the lots, dropout masks and normal
    draws it used: per tensor, biases included, -lr (clipped sum + 2 L z draw) / m."""
    n, seed = 6, 4
    rng = np.random.default_rng(5)
    x, y = rng.random((n, 784)).astype(np.float32), rng.integers(0, 10, n)
    hp = DPSGDHyper(epochs=1, lot_size=3, learning_rate=0.5, noise=1.1, clip=0.9)
    rec = _Recorder(monkeypatch, cnn, cnn.images(x), y)
    trained = cnn.train(x, y, hp, seed=seed)
    assert len(rec.lots) == dpsgd.steps(n, hp.lot_size, hp.epochs) == 2, f"{len(rec.lots)} steps, the accountant counts 2"
    assert rec.clips == [hp.clip] * 2
    model = cnn.Net()
    cnn.init_params(model, torch.Generator().manual_seed(seed))
    model = model.double()
    names = [k for k, _ in model.named_parameters()]
    draws = rec.draws_by_step([p.shape for p in model.parameters()])
    xs, ys = torch.as_tensor(cnn.images(x), dtype=torch.float64), torch.as_tensor(y)
    for lot, masks, step_draws in zip(rec.lots, rec.masks, draws):
        sums, _ = CLIPPED_SUM[cnn](model, xs[lot], ys[lot], tuple(mk.double() for mk in masks), hp.clip)
        with torch.no_grad():
            for (k, p), e in zip(model.named_parameters(), step_draws):
                p -= hp.learning_rate * (sums[k] + 2 * hp.clip * hp.noise * e.double()) / hp.lot_size
    errors = [(k, float((ours.detach().double() - ref.detach()).abs().max()), 1e-5 + 1e-4 * float(ref.detach().abs().max()))
              for k, ours, ref in zip(names, trained.parameters(), model.parameters())]
    assert all(err < tol for _, err, tol in errors), "off the reference by " + ", ".join(
        f"{k} {err:.3g}" for k, err, tol in errors if err >= tol)


# ---- linear (numba kernel) ------------------------------------------------------------------------------

@pytest.mark.parametrize("n,m", [(6, 3), (7, 2)])
def test_linear_trainer_lots_are_uniform_subsets_independent_of_the_last(n, m):
    """Over 2 runs x 20,000 steps of the compiled kernel: every one of the C(n, m) subsets is a lot
    equally often (chi-square), and the pair (lot t, lot t+1) is uniform over C(n, m)^2 pairs (no
    dependence on the order the previous step left the permutation in). A biased swap (j uniform
    over all of [0, n), or over [k, n-1)) fails both by far."""
    x, y = np.ones((n, 1)), np.ones(n)
    per_epoch = dpsgd.steps(n, m, 1)
    hp = DPSGDHyper(20_000 // per_epoch, m, 0.1, 1.0, 1.0)
    _, lots, _ = linear._train(x, y, "logistic", "sgd", hp, 2, np.random.default_rng(0), record=True)
    assert lots.shape == (2, dpsgd.steps(n, m, hp.epochs), m)
    assert all(len(set(lot)) == m for lot in lots.reshape(-1, m)), "a lot repeats an example"
    subsets = {s: i for i, s in enumerate(itertools.combinations(range(n), m))}
    ids = np.array([[subsets[tuple(sorted(lot))] for lot in run] for run in lots])   # (runs, steps)
    c = len(subsets)
    counts = np.bincount(ids.ravel(), minlength=c)
    expected = ids.size / c
    p = _chi2_sf(((counts - expected) ** 2 / expected).sum(), c - 1)
    assert p > P_MIN, (f"the {c} subsets are not equally likely lots: chi-square p = {p:.2g} "
                       f"(counts {counts.min()}..{counts.max()})")
    pairs = np.bincount((ids[:, :-1] * c + ids[:, 1:]).ravel(), minlength=c * c)
    expected = pairs.sum() / (c * c)
    p = _chi2_sf(((pairs - expected) ** 2 / expected).sum(), c * c - 1)
    assert p > P_MIN, f"consecutive lots are not independent uniform subsets: chi-square p = {p:.2g}"
