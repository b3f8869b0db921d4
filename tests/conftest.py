"""Shared fixtures: a local HTTP server on 127.0.0.1 and a helper that runs the real Snakemake workflow."""
from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
