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
