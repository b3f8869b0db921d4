"""A release under `release.randomness: os` (docs/release.md): every draw of the built-in trainers from the
cryptographic generator, float64 noise that passes the mechanism tests, and no seeded stream touched."""
import secrets

import numpy as np
import pytest
import torch
from randomgen import ChaCha
from scipy import stats

from dptradeoff import secure_random
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
    # swap from rng.integers (not the SplitMix64 stream), then the step's d + 1 normals
    rng = np.random.default_rng(0)
    x, y = (rng.random((30, 3)) < 0.5).astype(np.float32), np.where(rng.random(30) < 0.5, 1.0, -1.0)
    hp, key = DPSGDHyper(2, 7, 0.1, 1.3, 1.0), secrets.randbits(256)
    _, lots, noise = linear._train(x, y, "logistic", "sgd", hp, 1, _chacha(key), record=True)
    replay = _chacha(key)
    replay.integers(2**64, dtype=np.uint64)            # the SplitMix64 seed, drawn but unused when secure
    perm = np.arange(30)
    for t in range(hp.steps(30)):
        for k in range(7):
            j = k + int(replay.integers(0, 30 - k))
            perm[[j, k]] = perm[[k, j]]
        assert np.array_equal(lots[0, t], perm[:7])
        assert np.array_equal(noise[0, t], 2 * hp.clip * hp.noise * replay.standard_normal(4))


def test_a_secure_linear_step_releases_the_noised_sum_on_its_grid():
    rng = np.random.default_rng(1)
    x, y = (rng.random((40, 3)) < 0.5).astype(np.float32), np.where(rng.random(40) < 0.5, 1.0, -1.0)
    hp = DPSGDHyper(1, 40, 1.0, 0.7, 1.0)       # one full-batch SGD step from w = 0: w = -g
    w = linear.train(x, y, "logistic", "sgd", hp, 1, secure_random.generator())[0]
    grid = 2 * hp.clip * hp.noise * secure_random.SNAP
    assert np.allclose(w * 40 / grid, np.round(w * 40 / grid), rtol=0, atol=1e-3)
    plain = linear.train(x, y, "logistic", "sgd", hp, 1, np.random.default_rng(3))[0]
    assert not np.allclose(plain * 40 / grid, np.round(plain * 40 / grid), rtol=0, atol=1e-3)


def test_secure_mlp_noise_is_float64_gaussian_with_the_claimed_std_per_tensor():
    # chi-square of the noise's quantiles per parameter tensor, from the trainer's own noised_average
    from randomgen import AESCounter

    source = batch_module.SecureNoise(np.random.Generator(AESCounter(key=7, counter=0)))   # a fixed key: repeatable
    std = torch.tensor([0.8, 2.5])
    for shape in ((2, 64, 30), (2, 64)):
        grad = torch.zeros(shape)
        noise = source.noised_average(grad, std, 1).double().numpy()
        for b, s in enumerate(std.tolist()):
            z = noise[b].ravel() / s
            counts = np.histogram(stats.norm.cdf(z), bins=10, range=(0, 1))[0]
            assert stats.chisquare(counts).pvalue > 1e-4, (shape, b, counts)
    # float64, not float32 draws widened: almost none is a float32 value; and the far tail has its Gaussian mass
    draws = source.rng.standard_normal(2_000_000)
    assert np.mean(draws == draws.astype(np.float32)) < 1e-3
    beyond = int((np.abs(draws) > 4.0).sum())            # expected 2e6 x 6.33e-5 = 127 (sd 11)
    assert abs(beyond - 2e6 * 2 * stats.norm.sf(4.0)) < 5 * np.sqrt(2e6 * 2 * stats.norm.sf(4.0)), beyond


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


def test_a_release_under_os_hands_its_trials_the_secure_generator():
    from dataclasses import replace

    from dptradeoff.config import load

    seeded = ReleaseSettings.from_config(load([]))
    assert not secure_random.is_secure(run._selection_rng(seeded, "release-selection", "p"))
    assert secure_random.is_secure(run._selection_rng(replace(seeded, randomness="os"), "release-selection", "p"))
