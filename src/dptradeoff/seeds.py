"""Deterministic seeds: every random draw derives from (config seed, and names/indices saying what it is for)."""
from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(*parts) -> int:
    """A 63-bit seed from the parts (e.g. seed, problem, method, run, index); stable across runs and machines."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def rng(*parts) -> np.random.Generator:
    return np.random.default_rng(derive_seed(*parts))


def entropy_words(values) -> np.ndarray:
    """SeedSequence entropy for a list of non-negative integers below 2**64, unambiguously: the count, then
    each value as two 32-bit words (numpy's own coercion of a list of ints splits each into as many words as
    it needs, so [2**32] and [0, 1] would seed the same streams)."""
    values = [int(v) for v in values]
    if any(not 0 <= v < 2**64 for v in values):
        raise ValueError(f"seeds must lie in [0, 2**64), got {values}")
    words = [len(values)] + [w for v in values for w in (v & 0xFFFFFFFF, v >> 32)]
    return np.array(words, dtype=np.uint32)


MT_STATE_OFFSET, MT_WORDS = 24, 624   # a CPU torch.Generator's state keeps its Mersenne Twister words there, 8 bytes each


def torch_generator(sequence: np.random.SeedSequence, device="cpu"):
    """A torch.Generator seeded from all of `sequence`'s entropy. A CPU generator's `manual_seed` keeps only
    the seed's low 32 bits (two seeds 2**32 apart draw the same numbers), so its 624-word Mersenne Twister
    state is filled from the sequence instead (tests/test_seeds.py checks the layout against numpy's MT19937);
    other devices' Philox generators take a full 64-bit seed."""
    import torch

    if torch.device(device).type != "cpu":
        return torch.Generator(device=device).manual_seed(int(sequence.generate_state(1, np.uint64)[0]))
    generator = torch.Generator().manual_seed(0)     # a fresh state: the twist runs at the first draw
    state = generator.get_state()
    words = sequence.generate_state(MT_WORDS, np.uint32)
    words[0] |= 1                                     # never the all-zero state MT19937 cannot leave
    state[MT_STATE_OFFSET:MT_STATE_OFFSET + 8 * MT_WORDS] = torch.from_numpy(words.astype("<u8").view(np.uint8).copy())
    generator.set_state(state)
    return generator


def seed_sequence(seed: int) -> np.random.SeedSequence:
    """The SeedSequence of one integer seed, all of its 64 bits kept."""
    return np.random.SeedSequence(entropy_words([int(seed) % 2**64]))
