"""The DP-SGD / DP-Adam mechanism of the trainers, as `dpsgd` accounts for it (issue 38, item 5):
N(0, (2 L z)^2) on every parameter tensor's clipped gradient sum (biases included), the noised
average alone fed to SGD or to both of Adam's moments, exactly `dpsgd.steps(n, m, epochs)` steps,
each on a lot of m distinct examples drawn uniformly, afresh every step.

The torch trainers (mlp.py, cnn.py) run batched, three networks with different clips, noises and rates
stepped together, and each network is rerun by a naive reference fed the lots and the normal draws it
used (recorded by wrapping `clipped_gradient_sum` and `torch.randn`); the noise scale is also checked
statistically, network by network and tensor by tensor, where the gradient is zero. A bug planted in one
network of a batch fails these checks. The linear trainer's lots are
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
from dptradeoff.seeds import seed_sequence, torch_generator
from dptradeoff.train import batch as batch_module
from dptradeoff.train import cnn, linear, mlp
from dptradeoff.train.batch import Batch
from dptradeoff.train.hyper import ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, DPSGDHyper

P_MIN = 1e-6   # a correct mechanism fails a statistical check below with probability about this (fixed seeds)
CLIPPED_SUM = {mlp: mlp.clipped_gradient_sum, cnn: cnn.clipped_gradient_sum}   # the real ones, for the references
# three networks stepped together, each with its own learning rate, noise and clip: a batch as the pipeline runs it
WIDTH = 3


def _batch(base: DPSGDHyper, seeds=(3, 11, 29)) -> Batch:
    scales = (1.0, 0.7, 1.3)
    return Batch(tuple(DPSGDHyper(base.epochs, base.lot_size, base.learning_rate * f, base.noise * f, base.clip / f)
                       for f in scales), tuple(seeds))


class _Recorder:
    """Wraps `module.clipped_gradient_sum` (recording each step's lots, one row of indices per network,
    identified from the rows the trainer passes, and its clips and dropout masks) and `torch.randn`
    (recording every draw, before the trainer scales it in place). `zero`: the wrapped sum returns zero
    gradients instead."""

    def __init__(self, monkeypatch, module, rows: np.ndarray, y: np.ndarray, zero: bool = False):
        self.lots, self.clips, self.masks, self.draws = [], [], [], []
        where = {row.tobytes(): i for i, row in enumerate(rows)}
        assert len(where) == len(rows), "rows must be distinct to identify the lots"
        real_sum, real_randn = CLIPPED_SUM[module], torch.randn

        def record(x, yb, clip, masks=None):
            flat = x.detach().cpu().numpy().reshape(x.shape[0], x.shape[1], -1)
            lot = np.array([[where.get(row.tobytes(), -1) for row in network] for network in flat])
            assert lot.min() >= 0, "the trainer passed a row that is not one of the training rows"
            np.testing.assert_array_equal(yb.cpu().numpy(), y[lot])
            self.lots.append(lot)
            self.clips.append(clip.detach().cpu().numpy().copy())
            self.masks.append(None if masks is None else tuple(mk.detach().cpu().clone() for mk in masks))

        def zeros(params, x):
            return ({k: torch.zeros_like(v) for k, v in params.items()} if isinstance(params, dict)
                    else [torch.zeros_like(p) for p in params]), torch.zeros(x.shape[:2], device=x.device)

        if module is mlp:
            def wrapped(params, x, yb, clip, keep=None):
                record(x, yb, clip)
                return zeros(params, x) if zero else real_sum(params, x, yb, clip, keep)
        else:
            def wrapped(params, x, yb, masks, clip, keep=None, chunk=cnn.CHUNK):
                record(x, yb, clip, masks)
                return zeros(params, x) if zero else real_sum(params, x, yb, masks, clip, keep, chunk)

        def randn(*args, **kwargs):
            out = real_randn(*args, **kwargs)
            self.draws.append(out.detach().cpu().clone())
            return out

        # the trainers run where they would (the GPU when there is one); what is recorded comes to the CPU
        monkeypatch.setattr(module, "clipped_gradient_sum", wrapped)
        monkeypatch.setattr(torch, "randn", randn)

    def draws_by_step(self, shapes, width):
        """The draws, one list per step of one (width, ...) draw per parameter tensor (shapes in parameter
        order); on a CPU the trainer draws each tensor network by network."""
        draws = []
        for d in self.draws:   # regroup per-network draws of one tensor into the batch's
            if draws and draws[-1].shape[0] < width and draws[-1].shape[1:] == d.shape[1:]:
                draws[-1] = torch.cat([draws[-1], d])
            else:
                draws.append(d)
        k = len(shapes)
        assert len(draws) == k * len(self.lots), (
            f"{len(draws)} normal draws for {len(self.lots)} steps of {k} parameter tensors: "
            "every tensor (biases included) needs its own noise at every step")
        steps = [draws[s:s + k] for s in range(0, len(draws), k)]
        for step in steps:
            assert [tuple(d.shape) for d in step] == [(width, *s) for s in shapes], "a draw per tensor, in parameter order"
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


def _lot_errors(lots, n, m, name=""):
    """What is wrong with one network's lots (a list of (m,) index arrays): m distinct indices per lot;
    inclusion counts as uniform m-subsets predict; consecutive lots overlap as often as independent
    m-subsets do (a shuffled epoch's would not)."""
    lots = np.array(lots)
    assert lots.ndim == 2 and lots.shape[1] == m and lots.min() >= 0 and lots.max() < n
    if not all(len(set(lot)) == m for lot in lots):
        return [f"{name}a lot repeats an example"]
    errors = []
    member = np.zeros((len(lots), n))
    np.put_along_axis(member, lots, 1.0, axis=1)
    counts, expected = member.sum(axis=0), len(lots) * m / n
    # Pearson's statistic times the finite-population correction (n-1)/(n-m) is ~ chi-square(n-1)
    p = _chi2_sf(((counts - expected) ** 2 / expected).sum() * (n - 1) / (n - m), n - 1)
    if p <= P_MIN:
        errors.append(f"{name}inclusion counts not uniform: chi-square p = {p:.2g}")
    errors += _overlap_errors(lots[:-1], lots[1:], n, m, f"{name}consecutive lots")
    return errors


def _overlap_errors(a, b, n, m, what):
    """Pairs of lots (a[t], b[t]) overlap as often as independent uniform m-subsets do."""
    overlap = np.array([len(set(u) & set(v)) for u, v in zip(a, b)])
    mean = m * m / n   # hypergeometric mean overlap of two independent m-subsets
    var = m * (m / n) * ((n - m) / n) * ((n - m) / (n - 1))
    if abs(overlap.mean() - mean) >= 5 * math.sqrt(var / len(overlap)):
        return [f"{what} overlap {overlap.mean():.3f} on average, independent ones {mean:.3f}"]
    return []


def _batch_lot_errors(lots, n, m):
    """Every network's lots uniform and fresh (`_lot_errors`), and independent of the other networks' at
    the same step."""
    lots = np.array(lots)   # (steps, B, m)
    errors = []
    for b in range(lots.shape[1]):
        errors += _lot_errors(lots[:, b], n, m, f"network {b}: ")
        for c in range(b):
            errors += _overlap_errors(lots[:, b], lots[:, c], n, m, f"networks {c} and {b}: lots of the same step")
    return errors


# ---- MLP ------------------------------------------------------------------------------------------------

def _mlp_data(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 784)).astype(np.float32), rng.integers(0, 10, n)


def _mlp_reference(x, y, arch, optimizer, hp, seed, lots, draws):
    """Paper 001 Alg. 3/4 for one MLP in float64, with the given lots and standard normal draws:
    g = (clipped sum + 2 L z draw) / m for every tensor, then SGD, or Adam with both moments of g."""
    params = [p.double()[None] for p in mlp.init_params(mlp.ARCHITECTURES[arch], torch_generator(seed_sequence(seed)), "cpu")]
    mu, nu = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    xs, ys = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y)
    clip = torch.tensor([hp.clip], dtype=torch.float64)
    for t, (lot, step_draws) in enumerate(zip(lots, draws), start=1):
        grads, _ = CLIPPED_SUM[mlp](params, xs[lot][None], ys[lot][None], clip)
        for k, (g, e) in enumerate(zip(grads, step_draws)):
            g = (g + 2 * hp.clip * hp.noise * e.double()) / hp.lot_size
            if optimizer == "sgd":
                params[k] = params[k] - hp.learning_rate * g
            else:
                mu[k] = ADAM_BETA1 * mu[k] + (1 - ADAM_BETA1) * g
                nu[k] = ADAM_BETA2 * nu[k] + (1 - ADAM_BETA2) * g * g
                params[k] = params[k] - hp.learning_rate * (mu[k] / (1 - ADAM_BETA1**t)) / (
                    torch.sqrt(nu[k] / (1 - ADAM_BETA2**t)) + ADAM_KAPPA)
    return [p[0] for p in params]


def _mlp_reference_errors(x, y, optimizer, batch, rec, trained):
    """Each network of the batch against the naive reference fed its own lots, draws, clip and rates."""
    draws = rec.draws_by_step([p.shape[1:] for p in trained], batch.width)
    names = [f"{kind}{layer}" for layer in range(len(trained) // 2) for kind in ("W", "b")]
    errors = []
    for b, (hp, seed) in enumerate(zip(batch.hypers, batch.seeds)):
        if not np.allclose([c[b] for c in rec.clips], hp.clip):
            errors.append(f"network {b}: clipped at {rec.clips[0][b]:.4g}, its L is {hp.clip:.4g}")
        expected = _mlp_reference(x, y, "mlp2", optimizer, hp, seed, [lot[b] for lot in rec.lots],
                                  [[d[b] for d in step] for step in draws])
        for name, ours, ref in zip(names, trained, expected):
            err, tol = float((ours[b].double().cpu() - ref).abs().max()), 1e-5 + 1e-4 * float(ref.abs().max())
            if err >= tol:
                errors.append(f"network {b} {name}: off the reference by {err:.3g}")
    return errors


def _run_mlp_against_reference(monkeypatch, optimizer):
    n = 24
    x, y = _mlp_data(n)
    lr = 0.5 if optimizer == "sgd" else 0.01
    batch = _batch(DPSGDHyper(epochs=2, lot_size=6, learning_rate=lr, noise=1.5, clip=1.2))
    rec = _Recorder(monkeypatch, mlp, x, y)
    trained = mlp.train_batch(x, y, "mlp2", optimizer, batch)
    assert len(rec.lots) == dpsgd.steps(n, 6, 2) == 8, f"{len(rec.lots)} steps, the accountant counts 8"
    return _mlp_reference_errors(x, y, optimizer, batch, rec, trained)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mlp_trainer_is_dpsgd_fed_its_lots_and_noise(monkeypatch, optimizer):
    """Each of three networks stepped together equals the naive Alg. 3/4 rerun on the lots it used and
    the normal draws it made, with its own clip, noise and rate: one draw per tensor per step (biases
    included) scaled by 2 L z, added to the clipped sum, divided by m; Adam's first and second moments
    both of that noised average. The noise (2 L z = 3.6 per coordinate) dwarfs the clipped sum (norm at
    most m L = 7.2 over all ~110,000 coordinates), so a wrong scale, a tensor without noise or a moment of
    the un-noised gradient is far off."""
    errors = _run_mlp_against_reference(monkeypatch, optimizer)
    assert not errors, f"{optimizer}: " + "; ".join(errors)


def _mlp_noise_errors(monkeypatch):
    """Zero gradients, n = m (one step an epoch, a checkpoint after each): every step moves every
    coordinate of every tensor of network b, each bias included, by -lr_b N(0, (2 L_b z_b)^2) / m."""
    n, steps = 5, 40
    x, y = _mlp_data(n, seed=1)
    batch = _batch(DPSGDHyper(epochs=steps, lot_size=n, learning_rate=0.3, noise=0.9, clip=0.8), seeds=(7, 8, 9))
    _Recorder(monkeypatch, mlp, x, y, zero=True)
    seen = []
    mlp.train_batch(x, y, "mlp2", "sgd", batch, checkpoint=lambda e, ps: seen.append([p.cpu().clone() for p in ps]))
    assert len(seen) == steps, f"{len(seen)} steps (checkpoints), the accountant counts {steps}"
    path = [mlp.init_batch(mlp.ARCHITECTURES["mlp2"], batch, "cpu")] + seen
    errors = []
    for b, hp in enumerate(batch.hypers):
        sigma = hp.learning_rate * 2 * hp.clip * hp.noise / hp.lot_size
        errors += [_normal_scale_error(f"network {b} layer {k // 2} {'bias' if k % 2 else 'weight'}",
                                       torch.stack([after[k][b] - before[k][b] for before, after in zip(path[:-1], path[1:])]),
                                       sigma) for k in range(len(path[0]))]
    return [e for e in errors if e]


def test_mlp_trainer_noise_is_2Lz_over_m_in_every_tensor(monkeypatch):
    errors = _mlp_noise_errors(monkeypatch)
    assert not errors, "; ".join(errors)


def _mlp_lot_errors(monkeypatch, optimizer, epochs):
    n, m = 20, 6   # round(20/6) = 3 steps an epoch (not 20 // 6 + 1 or ceil)
    x, y = _mlp_data(n, seed=2)
    rec = _Recorder(monkeypatch, mlp, x, y, zero=True)
    batch = _batch(DPSGDHyper(epochs, m, 0.01, 1.0, 1.0), seeds=(0, 1, 2))
    trained = mlp.train_batch(x, y, "mlp2", optimizer, batch)
    assert len(rec.lots) == dpsgd.steps(n, m, epochs) == 3 * epochs, f"{len(rec.lots)} steps, the accountant counts {3 * epochs}"
    rec.draws_by_step([p.shape[1:] for p in trained], batch.width)
    return _batch_lot_errors(rec.lots, n, m) if optimizer == "sgd" else []


@pytest.mark.parametrize("optimizer,epochs", [("sgd", 100), ("adam", 7)])
def test_mlp_trainer_runs_the_lots_and_steps_dpsgd_accounts_for(monkeypatch, optimizer, epochs):
    """T = epochs * round(n/m) gradient steps (one noise draw per tensor each), each network's lot m
    distinct examples, uniform, drawn afresh every step and independently of the other networks' (checked
    over 300 lots with SGD)."""
    errors = _mlp_lot_errors(monkeypatch, optimizer, epochs)
    assert not errors, "; ".join(errors)


def _plant(monkeypatch, bug):
    """A bug in network 1 of the batch only (the others stay correct)."""
    if bug == "noise halved":
        real = Batch.noise_std
        monkeypatch.setattr(Batch, "noise_std", lambda self, dev: real(self, dev) * torch.tensor([1.0, 0.5, 1.0], device=dev))
    elif bug == "clip doubled":
        real_column = Batch.column

        def column(self, values, dev):
            out = real_column(self, values, dev)
            if [float(v) for v in values] == [h.clip for h in self.hypers]:   # the clip column
                out = out * torch.tensor([1.0, 2.0, 1.0], device=out.device)
            return out
        monkeypatch.setattr(Batch, "column", column)
    elif bug == "lot shared with network 0":
        real_lots = batch_module.draw_lots

        def shared(generator, width, n, m, dev):
            lots = real_lots(generator, width, n, m, dev)
            lots[1] = lots[0]
            return lots
        monkeypatch.setattr(mlp, "draw_lots", shared)
    elif bug == "lot shuffled once an epoch":
        real_lots = batch_module.draw_lots
        order = {}

        def epoch_lots(generator, width, n, m, dev):
            lots = real_lots(generator, width, n, m, dev)
            order.setdefault("perm", np.random.default_rng(0).permutation(n))
            order.setdefault("t", 0)
            start = (order["t"] * m) % (n - n % m)
            lots[1] = torch.as_tensor(order["perm"][start:start + m])
            order["t"] += 1
            return lots
        monkeypatch.setattr(mlp, "draw_lots", epoch_lots)


@pytest.mark.parametrize("bug,check", [("noise halved", "noise"), ("clip doubled", "reference"),
                                       ("lot shared with network 0", "lots"), ("lot shuffled once an epoch", "lots")])
def test_a_bug_planted_in_one_network_of_a_batch_is_caught(monkeypatch, bug, check):
    """The checks above look at every network of the batch: a bug in network 1 alone fails them, naming it."""
    _plant(monkeypatch, bug)
    errors = {"noise": lambda: _mlp_noise_errors(monkeypatch),
              "reference": lambda: _run_mlp_against_reference(monkeypatch, "sgd"),
              "lots": lambda: _mlp_lot_errors(monkeypatch, "sgd", 100)}[check]()
    assert errors, f"{bug} in network 1 went unnoticed"
    assert all("network 1" in e or "and 1" in e for e in errors), errors


@pytest.mark.parametrize("dev", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
@pytest.mark.parametrize("source", ["numpy (CPU)", "device keys (GPU)"])
def test_both_lot_sources_draw_uniform_fresh_independent_lots(dev, source):
    """The two ways a batch draws its lots (batch.draw_lots: numpy's Generator where the batch trains on a CPU,
    the top m of n random keys on a GPU), each checked as the trainers' lots are, over 300 steps of 3
    networks; the key path is checked on the CPU too, so CI covers it without a GPU."""
    if source == "numpy (CPU)" and dev != "cpu":
        pytest.skip("numpy draws the lots of a CPU batch only")
    n, m = 20, 6
    origin = np.random.default_rng(0) if source.startswith("numpy") else torch.Generator(device=dev).manual_seed(0)
    lots = [batch_module.draw_lots(origin, WIDTH, n, m, dev).cpu().numpy() for _ in range(300)]
    errors = _batch_lot_errors(lots, n, m)
    assert not errors, "; ".join(errors)


# ---- CNN ------------------------------------------------------------------------------------------------

def test_cnn_trainer_is_dpsgd_fed_its_lots_and_noise(monkeypatch):
    """Each of three CNNs stepped together equals naive DP-SGD rerun (float64, one `Net` at a time) on the
    lots, dropout masks and normal draws it used: per tensor, biases included, -lr (clipped sum + 2 L z
    draw) / m, with its own clip, noise and rate."""
    n = 6
    rng = np.random.default_rng(5)
    x, y = rng.random((n, 784)).astype(np.float32), rng.integers(0, 10, n)
    batch = _batch(DPSGDHyper(epochs=1, lot_size=3, learning_rate=0.5, noise=1.1, clip=0.9), seeds=(4, 5, 6))
    rec = _Recorder(monkeypatch, cnn, cnn.images(x), y)
    trained = cnn.train_batch(x, y, batch)
    assert len(rec.lots) == dpsgd.steps(n, 3, 1) == 2, f"{len(rec.lots)} steps, the accountant counts 2"
    draws = rec.draws_by_step([cnn.SHAPES[k] for k in cnn.NAMES], batch.width)
    xs, ys = torch.as_tensor(cnn.images(x), dtype=torch.float64), torch.as_tensor(y)
    errors = []
    for b, (hp, seed) in enumerate(zip(batch.hypers, batch.seeds)):
        assert np.allclose([c[b] for c in rec.clips], hp.clip)
        params = {k: v.double() for k, v in cnn.init_batch([seed], "cpu").items()}
        for lot, masks, step_draws in zip(rec.lots, rec.masks, draws):
            sums, _ = CLIPPED_SUM[cnn](params, xs[lot[b]][None], ys[lot[b]][None],
                                       tuple(mk[b:b + 1].double() for mk in masks), torch.tensor([hp.clip]))
            for k, e in zip(cnn.NAMES, step_draws):
                params[k] = params[k] - hp.learning_rate * (sums[k] + 2 * hp.clip * hp.noise * e[b:b + 1].double()) / hp.lot_size
        for k in cnn.NAMES:
            err, tol = float((trained[k][b].double().cpu() - params[k][0]).abs().max()), 1e-5 + 1e-4 * float(params[k].abs().max())
            if err >= tol:
                errors.append(f"network {b} {k}: off the reference by {err:.3g}")
    assert not errors, "; ".join(errors)


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
