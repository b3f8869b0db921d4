"""A chain replays bit for bit whatever the machine's load (docs/tests.md): the GP backend is configured for
deterministic arithmetic (one thread per TensorFlow pool, op determinism, no oneDNN kernels), and a GP fit and
its predictions in a fresh process are the same bits with two CPU-bound processes running beside it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

FIT = """
import numpy as np
from dptradeoff.bo import gp
gpflow, tf = gp.backend()
from tensorflow.python.framework import config as tf_config
import os
rng = np.random.default_rng(0)
x = rng.random((80, 4)); y = np.sin(3 * x).sum(1) + 0.1 * rng.normal(size=80)
post = gp.fitter(4).fit(x, y, False, 2, np.random.default_rng(1))
mean, var = post.predict(rng.random((50, 4)))
print(os.environ.get("TF_ENABLE_ONEDNN_OPTS"), tf.config.threading.get_intra_op_parallelism_threads(),
      tf.config.threading.get_inter_op_parallelism_threads(), tf_config.is_op_determinism_enabled())
print(post.hyperparameters.as_dict(), mean.tobytes().hex(), var.tobytes().hex())
"""
BURN = "while True: pass"


def _fit() -> str:
    done = subprocess.run([sys.executable, "-c", FIT], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_a_gp_fit_is_the_same_bits_with_the_machine_loaded():
    quiet = _fit()
    assert quiet.splitlines()[0] == "0 1 1 True", quiet.splitlines()[0]   # the backend's configuration
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        loaded = _fit()
    finally:
        for burner in burners:
            burner.kill()
    assert loaded == quiet
