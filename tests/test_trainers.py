"""Trainers: per-example clipping against Opacus, Alg. 3/4 against a naive reference, bolt-on sensitivity."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dptradeoff.train import linear, mlp, outpert, svt
from dptradeoff.train.hyper import ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, DPSGDHyper


def _opacus_clipped_sum(model, loss_fn, x, y, clip):
    """Sum of per-example gradients clipped to `clip`, per-example gradients from Opacus's GradSampleModule."""
    from opacus import GradSampleModule

    gsm = GradSampleModule(model, loss_reduction="sum")
    loss = loss_fn(gsm(x), y)
    loss.backward()
    per_example = [p.grad_sample.reshape(len(x), -1) for p in gsm.parameters()]
    norms = torch.cat(per_example, dim=1).norm(dim=1)
    scale = torch.clamp(clip / norms, max=1.0)
    return [(g * scale[:, None]).sum(0) for g in per_example], norms


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared"])
def test_linear_clipped_gradient_sum_equals_opacus(loss):
    rng = np.random.default_rng(0)
    m, d, clip = 64, 12, 0.7
    x = rng.normal(size=(m, d))
    y = rng.choice([-1.0, 1.0], size=m) if loss != "squared" else rng.normal(size=m)
    w = rng.normal(size=d + 1) * 0.5

    ours, our_norms = linear.clipped_gradient_sum(loss, w, linear.with_bias(x), y, clip)

    model = torch.nn.Linear(d, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor(w[:d])[None, :])
        model.bias.copy_(torch.tensor(w[d:]))
    losses = {
        "logistic": lambda s, t: torch.nn.functional.softplus(-t * s[:, 0]).sum(),
        "hinge": lambda s, t: torch.relu(1 - t * s[:, 0]).sum(),
        "squared": lambda s, t: (0.5 * (s[:, 0] - t) ** 2).sum(),
    }
    (gw, gb), norms = _opacus_clipped_sum(model, losses[loss], torch.tensor(x), torch.tensor(y), clip)
    assert np.allclose(our_norms, norms.numpy(), rtol=1e-10)
    assert np.allclose(ours, np.concatenate([gw.numpy(), gb.numpy()]), rtol=1e-10, atol=1e-12)


def test_mlp_ghost_clipping_equals_opacus():
    torch.manual_seed(0)
    sizes, m, clip = (20, 16, 8, 5), 32, 0.5
    params = mlp.init_params(sizes, torch.Generator().manual_seed(1), torch.device("cpu"))
    params = [p.double().requires_grad_(True) for p in params]
    x = torch.randn(m, 20, dtype=torch.float64)
    y = torch.randint(0, 5, (m,))
    ours, our_norms = mlp.clipped_gradient_sum(params, x, y, clip)

    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 5)).double()
    with torch.no_grad():
        for p, q in zip(model.parameters(), params):
            p.copy_(q)
    theirs, norms = _opacus_clipped_sum(model, lambda s, t: torch.nn.functional.cross_entropy(s, t, reduction="sum"), x, y, clip)
    assert torch.allclose(our_norms, norms, rtol=1e-10)
    for a, b in zip(ours, theirs):
        assert torch.allclose(a.reshape(-1), b, rtol=1e-9, atol=1e-12)


def _reference_alg(x, y, loss, optimizer, hp, runs, seed):
    """Paper 001 Alg. 3/4 written naively, one example at a time, drawing the same random numbers."""
    rng = np.random.default_rng(seed)
    xs = np.concatenate([x, np.ones((len(x), 1))], axis=1).astype(np.float32).astype(np.float64)
    n, d = xs.shape
    w = np.zeros((runs, d))
    mu, nu = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, hp.steps(n) + 1):
        lots = [rng.choice(n, hp.lot_size, replace=False) for _ in range(runs)]
        noise = rng.normal(0.0, 2.0 * hp.clip * hp.noise, size=w.shape)
        for r in range(runs):
            total = np.zeros(d)
            for j in lots[r]:
                s = xs[j] @ w[r]
                if loss == "logistic":
                    grad = -y[j] / (1 + np.exp(y[j] * s)) * xs[j]
                else:
                    grad = (-y[j] if y[j] * s < 1 else 0.0) * xs[j]
                norm = np.linalg.norm(grad)
                total += grad * min(1.0, hp.clip / norm) if norm > 0 else grad
            g = (total + noise[r]) / hp.lot_size
            if optimizer == "sgd":
                w[r] -= hp.learning_rate * g
            else:
                mu[r] = ADAM_BETA1 * mu[r] + (1 - ADAM_BETA1) * g
                nu[r] = ADAM_BETA2 * nu[r] + (1 - ADAM_BETA2) * g**2
                w[r] -= hp.learning_rate * (mu[r] / (1 - ADAM_BETA1**t)) / (np.sqrt(nu[r] / (1 - ADAM_BETA2**t)) + ADAM_KAPPA)
    return w


@pytest.mark.parametrize("loss, optimizer", [("logistic", "sgd"), ("logistic", "adam"), ("hinge", "sgd")])
def test_linear_trainer_is_algorithm_3_and_4(loss, optimizer):
    rng = np.random.default_rng(3)
    x = (rng.random((60, 5)) < 0.4).astype(np.float64)
    y = np.where(x[:, 0] + x[:, 1] + rng.normal(0, 0.3, 60) > 0.8, 1.0, -1.0)
    hp = DPSGDHyper(epochs=3, lot_size=7, learning_rate=0.1, noise=0.8, clip=0.5)
    ours = linear.train(x, y, loss, optimizer, hp, runs=2, rng=np.random.default_rng(11))
    reference = _reference_alg(x, y, loss, optimizer, hp, runs=2, seed=11)
    assert np.allclose(ours, reference, rtol=1e-4, atol=1e-5)


def test_linear_trainer_learns_without_noise():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 4))
    y = np.where(x @ np.array([1.0, -2.0, 0.5, 0.0]) > 0, 1.0, -1.0)
    w = linear.train(x, y, "logistic", "adam", DPSGDHyper(5, 50, 0.05, 0.0, 10.0), runs=1, rng=rng)
    assert linear.accuracy(w, x, y)[0] > 0.97


def test_mlp_trainer_learns_and_is_deterministic():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    x = rng.random((400, 784)).astype(np.float32)
    x[:, :50] += 0.5 * y[:, None]
    hp = DPSGDHyper(epochs=6, lot_size=40, learning_rate=0.02, noise=0.0, clip=10.0)
    a = mlp.train(x, y, "mlp2", "sgd", hp, seed=5)
    b = mlp.train(x, y, "mlp2", "sgd", hp, seed=5)
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert mlp.accuracy(a, x, y) > 0.8


def test_bolt_on_sensitivity_bound_holds_on_neighbouring_datasets():
    """Replace one example, train with the same permutations: ||w - w'|| <= 2L/(gamma n) (Wu et al. Thm 6)."""
    rng = np.random.default_rng(0)
    n = 150
    x = outpert.normalise(rng.normal(size=(n, 6)))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    x2, y2 = x.copy(), y.copy()
    x2[17], y2[17] = outpert.normalise(rng.normal(size=(1, 6)))[0], -y[17]
    gammas = np.array([1e-3, 1e-2, 1e-1, 1.0])
    w = outpert.train(x, y, gammas, np.random.default_rng(5))
    w2 = outpert.train(x2, y2, gammas, np.random.default_rng(5))
    gaps = np.linalg.norm(w - w2, axis=1)
    bounds = np.array([outpert.sensitivity(g, n) for g in gammas])
    assert np.all(gaps <= bounds) and np.all(gaps > 0)


def test_svt_f1_extremes():
    rng = np.random.default_rng(0)
    # Almost no noise and C >= number of true queries: every true query found, nothing else.
    assert svt.f1_scores(10, 1e-4, 20, rng).min() == 1.0
    # C = 1 with no noise finds exactly one true query: F1 = 2/(2+9).
    assert svt.f1_scores(1, 1e-4, 5, rng) == pytest.approx(2 / 11)
