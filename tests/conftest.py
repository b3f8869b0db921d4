"""Shared fixtures: a local HTTP server on 127.0.0.1, a helper that runs the real Snakemake workflow, and
pipelines built once per test session (`shared_pipeline`) for every test that only reads their outputs."""
from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

import pytest
from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """pytest-xdist keeps an xdist_group (a shared pipeline's readers, the SLURM cluster's tests) on one worker
    by renaming items through `item._nodeid`, which pytest 9.2 no longer reads: there the groups would be split
    (two workers building one pipeline, a cluster stopped under another worker's test). Stop at once instead."""
    if getattr(config.option, "dist", "no") == "loadgroup" and pytest.version_tuple[:2] >= (9, 2):
        raise pytest.UsageError(f"pytest {pytest.__version__} breaks pytest-xdist's --dist loadgroup (the suite's "
                                "groups would be split): install the pins of envs/requirements.txt (./in-env pytest).")


@pytest.fixture
def http_server(tmp_path):
    """Serve tmp_path/'www' on 127.0.0.1 (ephemeral port); yields (folder, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def snakemake(workdir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the repository's Snakefile with `workdir` as working directory (config/ linked in)."""
    workdir.mkdir(parents=True, exist_ok=True)
    if not (workdir / "config").exists():
        (workdir / "config").symlink_to(REPO / "config")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture
def run_snakemake():
    return snakemake


def session_folder(tmp_path_factory) -> Path:
    """A folder every test of this pytest session sees, whichever pytest-xdist worker runs it (each
    worker's own temporary folder lies inside the session's)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_pipeline(tmp_path_factory, name: str, build: Callable[[Path], subprocess.CompletedProcess]) -> tuple[Path, subprocess.CompletedProcess]:
    """`build(work)` run once per test session, whichever worker asks first (the others wait on a file
    lock, then read its record): the working folder and the run's outcome. Tests given it only read."""
    root = session_folder(tmp_path_factory) / "pipelines"
    root.mkdir(exist_ok=True)
    work, record = root / name, root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if not record.exists():
            done = build(work)
            record.write_text(json.dumps({"args": [str(a) for a in done.args], "returncode": done.returncode,
                                          "stdout": done.stdout, "stderr": done.stderr}))
    saved = json.loads(record.read_text())
    return work, subprocess.CompletedProcess(saved["args"], saved["returncode"], saved["stdout"], saved["stderr"])


@pytest.fixture(scope="session")
def tiny_all(tmp_path_factory):
    """The tiny config's `all` (tests/tiny.py), built once per session: (working folder, the run). The
    tests of its outputs only read it; they share the `tiny` xdist group, so one worker builds it while
    the other goes on with the rest of the suite."""
    import yaml

    from tiny import TINY

    def build(work: Path) -> subprocess.CompletedProcess:
        config = work.parent / "tiny.yaml"
        config.write_text(yaml.safe_dump(TINY))
        return snakemake(work, "all", "--cores", "2", f"--configfile={config}", timeout=1800)

    return shared_pipeline(tmp_path_factory, "tiny-all", build)


@pytest.fixture(scope="session")
def paper_dry_run(tmp_path_factory):
    """`snakemake all -n --configfile config/paper.yaml` (the papers' scale: thousands of jobs, about a
    minute to plan), once per session for the tests that read its plan (xdist group `paper-dry-run`)."""
    return shared_pipeline(tmp_path_factory, "paper-dry-run",
                           lambda work: snakemake(work, "all", "-n", "--configfile=config/paper.yaml"))[1]
