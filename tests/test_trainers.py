"""Trainers: per-example clipping against Opacus, Alg. 3/4 against a naive reference, bolt-on sensitivity."""
from __future__ import annotations

import math

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
    # two networks stacked, each on its own lot and clip: network 1 is checked against Opacus
    params = [torch.stack(pair).double() for pair in zip(
        mlp.init_params(sizes, torch.Generator().manual_seed(7), torch.device("cpu")),
        mlp.init_params(sizes, torch.Generator().manual_seed(1), torch.device("cpu")))]
    xs = torch.randn(2, m, 20, dtype=torch.float64)
    ys = torch.randint(0, 5, (2, m))
    stacked, stacked_norms = mlp.clipped_gradient_sum(params, xs, ys, torch.tensor([0.1, clip], dtype=torch.float64))
    ours, our_norms, x, y, params = [g[1] for g in stacked], stacked_norms[1], xs[1], ys[1], [p[1] for p in params]

    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 5)).double()
    with torch.no_grad():
        for p, q in zip(model.parameters(), params):
            p.copy_(q)
    theirs, norms = _opacus_clipped_sum(model, lambda s, t: torch.nn.functional.cross_entropy(s, t, reduction="sum"), x, y, clip)
    assert torch.allclose(our_norms, norms, rtol=1e-10)
    for a, b in zip(ours, theirs):
        assert torch.allclose(a.reshape(-1), b, rtol=1e-9, atol=1e-12)


def _reference_alg(x, y, loss, optimizer, hp, lots, noise):
    """Paper 001 Alg. 3/4 written naively, one example at a time, with given lots (runs, steps, m)
    and noise (runs, steps, d + 1)."""
    xs = np.concatenate([x, np.ones((len(x), 1))], axis=1).astype(np.float32).astype(np.float64)
    runs, steps, _ = lots.shape
    w = np.zeros((runs, xs.shape[1]))
    mu, nu = np.zeros_like(w), np.zeros_like(w)
    for r in range(runs):
        for t in range(1, steps + 1):
            total = np.zeros(xs.shape[1])
            for j in lots[r, t - 1]:
                s = xs[j] @ w[r]
                if loss == "logistic":
                    grad = -y[j] / (1 + np.exp(y[j] * s)) * xs[j]
                elif loss == "hinge":
                    grad = (-y[j] if y[j] * s < 1 else 0.0) * xs[j]
                else:
                    grad = (s - y[j]) * xs[j]
                norm = np.linalg.norm(grad)
                total += grad * min(1.0, hp.clip / norm) if norm > 0 else grad
            g = (total + noise[r, t - 1]) / hp.lot_size
            if optimizer == "sgd":
                w[r] -= hp.learning_rate * g
            else:
                mu[r] = ADAM_BETA1 * mu[r] + (1 - ADAM_BETA1) * g
                nu[r] = ADAM_BETA2 * nu[r] + (1 - ADAM_BETA2) * g**2
                w[r] -= hp.learning_rate * (mu[r] / (1 - ADAM_BETA1**t)) / (np.sqrt(nu[r] / (1 - ADAM_BETA2**t)) + ADAM_KAPPA)
    return w


def _small_task(loss, features):
    rng = np.random.default_rng(3)
    x = (rng.random((60, 5)) < 0.4).astype(np.float64)
    if features == "real":
        x *= rng.normal(size=x.shape)
    if loss == "squared":
        return x, x[:, 0] - 0.5 * x[:, 1] + rng.normal(0, 0.3, 60)
    return x, np.where(x[:, 0] + x[:, 1] + rng.normal(0, 0.3, 60) > 0.8, 1.0, -1.0)


@pytest.mark.parametrize("storage", ["csr-binary", "csr-real", "dense"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared"])
def test_linear_trainer_is_algorithm_3_and_4(loss, optimizer, storage):
    """The compiled trainer's weights equal the naive Alg. 3/4 fed the lots and noise it drew."""
    x, y = _small_task(loss, "binary" if storage == "csr-binary" else "real")
    hp = DPSGDHyper(epochs=3, lot_size=7, learning_rate=0.1, noise=0.8, clip=0.5)
    ours, lots, noise = linear._train(x, y, loss, optimizer, hp, 2, np.random.default_rng(11), record=True,
                                      csr=storage != "dense")
    assert lots.shape == (2, hp.steps(60), 7) and noise.shape == (2, hp.steps(60), 6)
    np.testing.assert_allclose(ours, _reference_alg(x, y, loss, optimizer, hp, lots, noise), rtol=1e-10, atol=1e-12)


def test_linear_trainer_lots_are_uniform_subsets_drawn_afresh():
    """Each lot is m distinct indices; every index and every pair of indices is in a lot as often
    as a uniform m-subset predicts (chi-square), over 2 runs x 8,000 steps."""
    n, m = 20, 5
    x, y = np.ones((n, 1)), np.ones(n)
    _, lots, _ = linear._train(x, y, "logistic", "sgd", DPSGDHyper(2000, m, 0.1, 1.0, 1.0), 2,
                               np.random.default_rng(0), record=True)
    lots = lots.reshape(-1, m)
    assert lots.min() >= 0 and lots.max() < n
    assert all(len(set(lot)) == m for lot in lots)
    member = np.zeros((len(lots), n))
    np.put_along_axis(member, lots, 1.0, axis=1)
    counts = member.sum(axis=0)
    expected = len(lots) * m / n
    # Pearson's statistic times the finite-population correction (n-1)/(n-m) is ~ chi-square(n-1).
    assert ((counts - expected) ** 2 / expected).sum() * (n - 1) / (n - m) < 55  # 19 dof: p ~ 2e-5
    pairs = (member.T @ member)[np.triu_indices(n, 1)]
    expected = len(lots) * m * (m - 1) / (n * (n - 1))
    assert ((pairs - expected) ** 2 / expected).sum() < 280  # chi-square, 189 dof: p ~ 2e-5


def test_linear_trainer_noise_is_gaussian_with_std_2Lz_independent_across_runs():
    x, y = _small_task("logistic", "binary")
    hp = DPSGDHyper(epochs=1000, lot_size=6, learning_rate=0.1, noise=0.8, clip=0.5)
    _, _, noise = linear._train(x, y, "logistic", "sgd", hp, 2, np.random.default_rng(1), record=True)
    sigma, samples = 2 * hp.clip * hp.noise, noise[0].size  # 10,000 steps x 6 coordinates per run
    assert abs(noise.std() / sigma - 1) < 0.02
    assert abs(noise.mean()) < 5 * sigma / np.sqrt(2 * samples)
    assert abs(np.mean(np.abs(noise) < sigma) - 0.6827) < 0.01  # Gaussian mass within one sigma
    assert abs(np.corrcoef(noise[0].ravel(), noise[1].ravel())[0, 1]) < 5 / np.sqrt(samples)
    assert abs(np.corrcoef(noise[0, :-1].ravel(), noise[0, 1:].ravel())[0, 1]) < 5 / np.sqrt(samples)


def test_linear_trainer_is_deterministic_in_the_generator_state():
    x, y = _small_task("logistic", "real")
    hp = DPSGDHyper(epochs=3, lot_size=7, learning_rate=0.1, noise=0.8, clip=0.5)
    train = lambda seed, **kw: linear._train(x, y, "logistic", "adam", hp, 2, np.random.default_rng(seed), **kw)[0]
    assert np.array_equal(train(5), train(5))
    assert np.array_equal(train(5), train(5, record=True))
    np.testing.assert_allclose(train(5, csr=True), train(5, csr=False), rtol=1e-12)
    assert not np.allclose(train(5), train(6))
    (_, lots5, noise5), (_, lots6, noise6) = (linear._train(x, y, "logistic", "adam", hp, 2, np.random.default_rng(s),
                                                            record=True) for s in (5, 6))
    assert not np.array_equal(lots5, lots6) and not np.allclose(noise5, noise6)
    rng = np.random.default_rng(5)
    assert not np.allclose(linear.train(x, y, "logistic", "adam", hp, 2, rng), linear.train(x, y, "logistic", "adam", hp, 2, rng))


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
    # 100 steps at rate 0.1 learn the planted signal from any seed (at 0.02 for 60 steps, half the seeds
    # stayed at the majority class)
    hp = DPSGDHyper(epochs=10, lot_size=40, learning_rate=0.1, noise=0.0, clip=10.0)
    a = mlp.train(x, y, "mlp2", "sgd", hp, seed=5)
    b = mlp.train(x, y, "mlp2", "sgd", hp, seed=5)
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert mlp.accuracy(a, x, y) > 0.8


def test_a_batch_holds_networks_that_share_their_lot_size_and_epochs_only():
    from dptradeoff.train.batch import Batch

    hp = DPSGDHyper(epochs=2, lot_size=8, learning_rate=0.1, noise=1.0, clip=1.0)
    assert Batch((hp, DPSGDHyper(2, 8, 0.3, 2.0, 0.5)), (1, 2)).width == 2
    for other in (DPSGDHyper(2, 9, 0.1, 1.0, 1.0), DPSGDHyper(3, 8, 0.1, 1.0, 1.0)):
        with pytest.raises(ValueError, match="share the lot size and the epochs"):
            Batch((hp, other), (1, 2))
    with pytest.raises(ValueError, match="one seed per network"):
        Batch((hp, hp), (1,))
    def states(seeds):
        return [s.generate_state(4).tolist() for s in Batch.replications(hp, seeds).stream_seeds]

    assert states([1, 2]) != states([2, 1]) and states([1, 2]) == states([1, 2])


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


def test_bolt_on_psgd_equals_the_dense_scalar_loop_exactly():
    """The compiled PSGD (sparse rows, projection skipped where it cannot act) returns exactly the
    floats of the dense scalar loop it replaced, on rows with many zeros and with the projection
    active (gamma 1 and 30) and inactive."""
    rng = np.random.default_rng(4)
    n, d = 60, 9
    x = outpert.normalise(rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.4))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    gammas = np.array([1e-3, 0.05, 1.0, 30.0])
    ours = outpert.train(x, y, gammas, np.random.default_rng(9))
    draws = np.random.default_rng(9)
    orders = [np.argsort(draws.random((len(gammas), n)), axis=1) for _ in range(outpert.EPOCHS)]
    x, dims = x.tolist(), d + 1
    for r, gamma in enumerate(gammas):
        w, t, radius = [0.0] * dims, 0, 1.0 / gamma
        for order in orders:
            for i in order[r]:
                t += 1
                margin = 0.0
                for f in range(dims):
                    margin += w[f] * x[i][f]
                c = -y[i] * 0.5 * (1.0 - math.tanh(0.5 * y[i] * margin))
                eta = min(1.0 / (0.25 + gamma), 1.0 / (gamma * t))
                norm2 = 0.0
                for f in range(dims):
                    w[f] -= eta * (c * x[i][f] + gamma * w[f])
                    norm2 += w[f] * w[f]
                scale = min(1.0, radius / max(math.sqrt(norm2), 1e-300))
                w = [v * scale for v in w]
        assert ours[r].tolist() == w


def test_bolt_on_psgd_is_wu_et_al_algorithm_2():
    """The compiled PSGD equals a plain numpy transcription (lot size 1, step min(1/beta, 1/(gamma t)),
    projection onto ||w|| <= 1/gamma), fed the same permutations."""
    rng = np.random.default_rng(1)
    x = outpert.normalise(rng.normal(size=(200, 5)))
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    gammas = np.array([1e-3, 0.05, 1.0, 30.0])
    ours = outpert.train(x, y, gammas, np.random.default_rng(9))
    draws = np.random.default_rng(9)
    w, t = np.zeros((4, 6)), 0
    for _ in range(outpert.EPOCHS):
        order = np.argsort(draws.random((4, 200)), axis=1)
        for j in range(200):
            t += 1
            for r, gamma in enumerate(gammas):
                i = order[r, j]
                c = -y[i] / (1.0 + np.exp(y[i] * (w[r] @ x[i])))
                w[r] -= min(1 / (0.25 + gamma), 1 / (gamma * t)) * (c * x[i] + gamma * w[r])
                w[r] *= min(1.0, (1 / gamma) / np.linalg.norm(w[r]))
    assert np.allclose(ours, w, rtol=1e-10, atol=1e-12)
