"""A release under `release.randomness: os` (docs/release.md): every draw of the built-in trainers from the
cryptographic generator, the noise sampled exactly on its grid (exact_noise.py) and read by the update alone,
and no seeded stream touched."""
import secrets
import threading

import numpy as np
import pytest
import torch
from randomgen import ChaCha
from scipy import stats

from dptradeoff import exact_noise, secure_random
from dptradeoff.release import run
from dptradeoff.release.settings import ReleaseSettings
from dptradeoff.train import batch as batch_module
from dptradeoff.train import linear, mlp
from dptradeoff.train.hyper import DPSGDHyper


def _chacha(key):
    return np.random.Generator(ChaCha(key=key, counter=0, rounds=20))


def test_the_secure_generator_is_aes_counter_mode_keyed_from_the_os_and_a_seeded_one_is_not_secure():
    from randomgen import AESCounter

    assert secure_random.is_secure(secure_random.generator())
    assert isinstance(secure_random.generator().bit_generator, AESCounter)
    assert not secure_random.is_secure(np.random.default_rng(1))
    assert not secure_random.is_secure(np.random.Generator(ChaCha(key=1, counter=0, rounds=8)))
    a, b = secure_random.generator(), secure_random.generator()
    assert not np.array_equal(a.integers(2**62, size=4), b.integers(2**62, size=4))


def test_the_linear_trainers_lots_and_noise_all_come_from_the_secure_generator():
    # replay the trainer's draws in Python from the same key: the lots by the same partial Fisher-Yates, each
    # swap from rng.integers (not the SplitMix64 stream), then the step's d + 1 exact grid noises K: each
    # released sum is gamma (rint(sum / gamma) + K)
    rng = np.random.default_rng(0)
    x, y = (rng.random((30, 3)) < 0.5).astype(np.float32), np.where(rng.random(30) < 0.5, 1.0, -1.0)
    hp, key = DPSGDHyper(2, 7, 0.1, 1.3, 1.0), secrets.randbits(256)
    _, lots, noise = linear._train(x, y, "logistic", "sgd", hp, 1, _chacha(key), record=True)
    grid = hp.release_grid(4)
    replay = _chacha(key)
    replay.integers(2**64, dtype=np.uint64)            # the SplitMix64 seed, drawn but unused when secure
    perm = np.arange(30)
    state, digits, counts = exact_noise.scratch()
    for t in range(hp.steps(30)):
        for k in range(7):
            j = k + int(replay.integers(0, 30 - k))
            perm[[j, k]] = perm[[k, j]]
        assert np.array_equal(lots[0, t], perm[:7])
        drawn = [exact_noise._draw(replay, state, digits, counts, grid.bits, False) for _ in range(4)]
        summed = linear.clipped_gradient_sum("logistic", _weights_before(x, y, hp, lots, noise, t), linear.with_bias(x)[lots[0, t]],
                                             y[lots[0, t]], hp.clip)[0]
        released = summed + noise[0, t]
        assert np.array_equal(np.rint(released / grid.spacing), np.rint(summed / grid.spacing) + drawn)


def _weights_before(x, y, hp, lots, noise, t):
    """The SGD weights before step t (0-based), from the recorded lots and noise (the released sums)."""
    w = np.zeros(x.shape[1] + 1)
    for s in range(t):
        summed = linear.clipped_gradient_sum("logistic", w, linear.with_bias(x)[lots[0, s]], y[lots[0, s]], hp.clip)[0]
        w = w - hp.learning_rate * (summed + noise[0, s]) / hp.lot_size
    return w


def test_a_secure_linear_step_releases_the_noised_sum_on_its_grid():
    rng = np.random.default_rng(1)
    x, y = (rng.random((40, 3)) < 0.5).astype(np.float32), np.where(rng.random(40) < 0.5, 1.0, -1.0)
    hp = DPSGDHyper(1, 40, 1.0, 0.7, 1.0)       # one full-batch SGD step from w = 0: w = -released / m
    spacing = hp.release_grid(4).spacing
    w = linear.train(x, y, "logistic", "sgd", hp, 1, secure_random.generator())[0]
    assert np.allclose(w * 40 / spacing, np.round(w * 40 / spacing), rtol=0, atol=1e-6)
    plain = linear.train(x, y, "logistic", "sgd", hp, 1, np.random.default_rng(3))[0]
    assert not np.allclose(plain * 40 / spacing, np.round(plain * 40 / spacing), rtol=0, atol=1e-3)


def test_secure_mlp_noise_is_the_exact_gaussian_on_the_networks_grid_per_tensor():
    # the MLP step's release: every tensor's noised sum is gamma times an integer, gamma the grid of all the
    # network's parameters, whatever the sum (0.3 and 0.7, near zero included: float32's fine spacing there no
    # longer shows the sum); the update reads released / m. Chi-square of the noise's quantiles per tensor.
    from randomgen import AESCounter

    hp = DPSGDHyper(1, 128, 0.1, 1.0, 1.0)
    grid = hp.release_grid(109_386)                 # MLP2's parameter count
    std = torch.tensor([2.0])
    with batch_module.SecureNoise(np.random.Generator(AESCounter(key=7, counter=0)), grid) as source:   # a fixed key
        for shape, value in (((1, 64, 30), 0.0), ((1, 64), 0.3), ((1, 700), 0.7)):
            released = source.noised_average(torch.full(shape, value), std, 128).double().numpy() * 128
            steps = np.rint(released / grid.spacing)
            assert np.allclose(released, steps * grid.spacing, rtol=2**-23, atol=0)    # float32 of gamma N / m
            z = (steps * grid.spacing - value).ravel() / grid.drawn_scale
            counts = np.histogram(stats.norm.cdf(z), bins=10, range=(0, 1))[0]
            assert stats.chisquare(counts).pvalue > 1e-4, (shape, counts)


def test_a_secure_mlp_release_draws_nothing_from_a_seeded_stream(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a seeded stream was drawn from in a secure training")

    monkeypatch.setattr(batch_module, "torch_generator", refuse)
    monkeypatch.setattr(batch_module, "lot_source", refuse)
    monkeypatch.setattr(torch, "randn", refuse)
    monkeypatch.setattr(torch, "rand", refuse)
    rng = np.random.default_rng(2)
    x, y = rng.random((40, 784)).astype(np.float32), rng.integers(0, 10, 40)
    params = mlp.train(x, y, "mlp2", "sgd", DPSGDHyper(1, 10, 0.1, 1.0, 1.0), 5, secure=secure_random.generator())
    assert all(torch.isfinite(p).all() for p in params)
    with pytest.raises(AssertionError, match="seeded stream"):
        mlp.train(x, y, "mlp2", "sgd", DPSGDHyper(1, 10, 0.1, 1.0, 1.0), 5)


def test_a_secure_mlp_training_shuts_its_noise_thread_down_when_it_ends_or_raises():
    # the thread that draws the MLP's noise ahead (SecureNoise) is gone once the training returns, and once it
    # raises (a checkpoint failing after the first epoch): no "exact-noise" thread it started is left alive
    def noise_threads():
        return {t for t in threading.enumerate() if t.name.startswith("exact-noise")}

    before = noise_threads()
    rng = np.random.default_rng(2)
    x, y = rng.random((40, 784)).astype(np.float32), rng.integers(0, 10, 40)
    hp = DPSGDHyper(2, 10, 0.1, 1.0, 1.0)
    params = mlp.train(x, y, "mlp2", "sgd", hp, 5, secure=secure_random.generator())
    assert all(torch.isfinite(p).all() for p in params) and noise_threads() <= before

    def fail(epoch, params):
        raise RuntimeError("a checkpoint failed")

    with pytest.raises(RuntimeError, match="a checkpoint failed"):
        mlp.train(x, y, "mlp2", "sgd", hp, 5, checkpoint=fail, secure=secure_random.generator())
    assert noise_threads() <= before


def test_a_release_under_os_hands_its_trials_the_secure_generator():
    from dataclasses import replace

    from dptradeoff.config import load

    seeded = ReleaseSettings.from_config(load([]))
    assert not secure_random.is_secure(run._selection_rng(seeded, "release-selection", "p"))
    assert secure_random.is_secure(run._selection_rng(replace(seeded, randomness="os"), "release-selection", "p"))
