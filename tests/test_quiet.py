"""Start-up noise is filtered out of stderr at the file-descriptor level, and nothing else is lost."""
from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = r"""
import ctypes, os, sys
from dptradeoff.quiet import native_stderr_filtered
libc = ctypes.CDLL(None)
with native_stderr_filtered(("cuDNN factory", "absl::InitializeLog")):
    os.write(2, b"E0000 cuda_dnn.cc] Unable to register cuDNN factory\n")
    libc.dprintf(2, b"WARNING: All log messages before absl::InitializeLog() is called\n")
    os.write(2, b"a real error from C\n")
    print("a real Python warning", file=sys.stderr, flush=True)
print("after the block", file=sys.stderr)
"""


def test_known_noise_is_dropped_and_everything_else_passes():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert done.stderr.splitlines() == ["a real error from C", "a real Python warning", "after the block"]


@pytest.mark.slow   # a fresh interpreter importing TensorFlow and GPflow: about 15 s
def test_importing_the_gp_backend_prints_nothing():
    done = subprocess.run([sys.executable, "-c", "from dptradeoff.bo import gp; gp.backend(); gp.fitter(2)"],
                          capture_output=True, text=True, check=True)
    assert done.stderr == "" and done.stdout == ""
