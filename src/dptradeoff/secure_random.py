"""A release's randomness under `release.randomness: os` (docs/release.md): a cryptographically secure
generator, and which draws must come from it.

`generator()` is numpy's Generator over AES-128 in counter mode (randomgen's `AESCounter`, with the CPU's AES
instructions where it has them), keyed with 128 bits from the operating system (`secrets`), its key never
recorded: a counter-mode block cipher is the generator NIST's CTR_DRBG builds on. It draws normals at about
PCG64's speed (11.6 ns against ChaCha20's 23 ns here). Every draw a built-in trainer makes for a release comes
from it when it is handed one (`is_secure`): the linear trainer's lots and noise (`train/linear.py`), the
MLPs' initialisation, lots and noise (`train/batch.py`). The noise itself is sampled exactly on a grid from
its random bits (`exact_noise`): the released numbers have exactly the distribution the accountant analyses.
"""
from __future__ import annotations

import secrets

import numpy as np

CHACHA_ROUNDS = 20    # a ChaCha generator counts as secure with at least these rounds


def generator() -> np.random.Generator:
    """A fresh AES-128 counter-mode Generator keyed from OS entropy."""
    from randomgen import AESCounter

    return np.random.Generator(AESCounter(key=secrets.randbits(128), counter=0))


def generators_from(rng: np.random.Generator, count: int) -> tuple[np.random.Generator, ...]:
    """`count` more AES counter-mode Generators, each keyed with 128 bits drawn from `rng` (a secure one: their
    keys, like its own, are never recorded): parallel streams for a release's threads."""
    from randomgen import AESCounter

    def key() -> int:
        high, low = (int(word) for word in rng.integers(2**64, size=2, dtype=np.uint64))
        return high << 64 | low

    return tuple(np.random.Generator(AESCounter(key=key(), counter=0)) for _ in range(count))


def is_secure(rng) -> bool:
    """Whether `rng` is a Generator over a cryptographically secure bit generator: AES counter mode
    (`generator`'s), or ChaCha with at least CHACHA_ROUNDS rounds."""
    if not isinstance(rng, np.random.Generator) or not type(rng.bit_generator).__module__.startswith("randomgen"):
        return False   # every seeded training asks: numpy's own generators answer without importing randomgen
    from randomgen import AESCounter, ChaCha

    bits = rng.bit_generator
    return isinstance(bits, AESCounter) or (isinstance(bits, ChaCha)
                                            and bits.state["state"]["rounds"] >= CHACHA_ROUNDS)
