"""Filtering known start-up noise out of stderr at the file-descriptor level.

TensorFlow's C++ runtime writes to file descriptor 2 while it is imported (absent CUDA
libraries, CPU instruction sets, oneDNN), before any Python-level logging setting can apply,
and some of it ignores TF_CPP_MIN_LOG_LEVEL. Redirecting fd 2 to /dev/null would also swallow
whatever else the process writes meanwhile (Snakemake's own messages, when TensorFlow is
imported in a thread of the Snakemake process), so fd 2 is routed through a pipe instead and
every line that does not match a known pattern is passed on unchanged.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Iterator


@contextlib.contextmanager
def native_stderr_filtered(patterns: tuple[str, ...]) -> Iterator[None]:
    """Within the block, drop stderr lines (from Python or C) that contain any of `patterns`."""
    try:
        sys.stderr.flush()
        original = os.dup(2)
    except (OSError, ValueError):   # no usable fd 2 (e.g. a closed stream): nothing to filter
        yield
        return
    read_end, write_end = os.pipe()

    def relay():
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                if not any(p.encode() in line for p in patterns):
                    os.write(original, line)

    thread = threading.Thread(target=relay, name="stderr-filter", daemon=True)
    thread.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(original, 2)       # closes the pipe's last write end: the relay sees end of file
        thread.join()
        os.close(original)
