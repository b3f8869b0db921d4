"""A release's randomness under `release.randomness: os` (docs/release.md): a cryptographically secure
generator, and which draws must come from it.

`generator()` is numpy's Generator over ChaCha20 (randomgen's `ChaCha`, 20 rounds), keyed with 256 bits
from the operating system (`secrets`), its key never recorded. Every draw a built-in trainer makes for a
release comes from it when it is handed one (`is_secure`): the linear trainer's lots and noise
(`train/linear.py`), the MLPs' initialisation, lots and noise (`train/batch.py`). Its normals are numpy's
ziggurat on 53-bit uniforms, in float64, and each noised sum is snapped to a grid of SNAP noise deviations
(linear) or rounded to float32 from float64 (MLP): the released numbers are then far coarser than the
sampler's output, so the gaps in the set of floats a sampler can produce, which the floating-point attacks
on Laplace (Mironov 2012) and Gaussian samplers (Jin et al. 2022) read, do not reach the release.
"""
from __future__ import annotations

import secrets

import numpy as np

ROUNDS = 20
SNAP = 2.0 ** -32     # the linear trainer's release grid, in noise deviations (2 L z)


def generator() -> np.random.Generator:
    """A fresh ChaCha20 Generator keyed from OS entropy."""
    from randomgen import ChaCha

    return np.random.Generator(ChaCha(key=secrets.randbits(256), counter=0, rounds=ROUNDS))


def is_secure(rng) -> bool:
    """Whether `rng` is a Generator over a cryptographically secure bit generator (`generator`'s)."""
    if not isinstance(rng, np.random.Generator):
        return False
    from randomgen import ChaCha

    return isinstance(rng.bit_generator, ChaCha) and rng.bit_generator.state["state"]["rounds"] >= ROUNDS
