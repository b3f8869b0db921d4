"""The single-node SLURM that profiles/slurm/local-slurm starts (as root), and Snakemake run through
`--profile profiles/slurm` against it, for tests/test_pipeline_slurm.py."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SCRIPT = REPO / "profiles/slurm/local-slurm"
MARK = "# Written by dptradeoff's profiles/slurm/local-slurm"
HARD_TIMEOUT = 2400   # seconds: a hang (e.g. a status command that never answers) fails the test


def ours() -> bool:
    conf = Path("/etc/slurm/slurm.conf")
    return conf.exists() and MARK in conf.read_text()


def unavailable() -> str | None:
    """Why this session cannot use the local cluster, or None when it can."""
    if not (os.geteuid() == 0 or (ours() and shutil.which("sbatch"))):
        return "needs root to start a local SLURM (profiles/slurm/local-slurm start), or that cluster running"
    if Path("/etc/slurm/slurm.conf").exists() and not ours():
        return "/etc/slurm/slurm.conf belongs to another SLURM setup; this test runs only on the local one"
    return None


def start() -> bool:
    """Start the cluster if need be; whether it was started here (and is to be stopped after)."""
    started = subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True).stdout.count("started here") < 5
    done = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return started


def stop() -> None:
    subprocess.run([str(SCRIPT), "stop"], capture_output=True, text=True, timeout=300)


def snakemake(work: Path, *args: str) -> subprocess.CompletedProcess:
    """Snakemake with the SLURM profile as the README runs it; killed, with its SLURM jobs, at the deadline."""
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "config").exists():
        (work / "config").symlink_to(REPO / "config")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work),
           "--profile", str(REPO / "profiles/slurm"), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=HARD_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run(["scancel", "--user", "root"], capture_output=True)
        out, _ = proc.communicate()
        pytest.fail(f"snakemake --profile profiles/slurm hung past {HARD_TIMEOUT} s; its output ends:\n{out[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "")


def sacct(since: str) -> list[dict]:
    """Every allocation (requeued ones too) of the jobs submitted since `since`."""
    out = subprocess.run(["sacct", "-X", "-D", "--parsable2", "--noheader", "-S", since,
                          "-o", "JobID,State,Comment%200,ReqMem,Elapsed"], capture_output=True, text=True, check=True)
    rows = [dict(zip(["id", "state", "comment", "req_mem", "elapsed"], line.split("|")))
            for line in out.stdout.splitlines() if line]
    return [r for r in rows if r["comment"].startswith("rule_")]


def max_rss_mb(job_id: str) -> float:
    out = subprocess.run(["sacct", "-j", job_id, "--parsable2", "--noheader", "-o", "MaxRSS"],
                         capture_output=True, text=True, check=True).stdout
    sizes = [float(v[:-1]) * {"K": 1 / 1024, "M": 1, "G": 1024}[v[-1]] for v in out.split() if v and v[-1] in "KMG"]
    return max(sizes, default=0.0)


def _requeue_one_running_evaluation(stop_event: threading.Event, requeued: dict) -> None:
    """Preempt the way a cluster does: `scontrol requeue` a running evaluation job, once, and note
    what SLURM says of it then (back in the queue, one restart)."""
    while not stop_event.is_set() and not requeued:
        out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i|%k"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            job, comment = line.split("|", 1)
            if comment.startswith("rule_evaluate"):
                if subprocess.run(["scontrol", "requeue", job], capture_output=True).returncode == 0:
                    shown = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
                    requeued.update(id=job, comment=comment, state=re.search(r"JobState=(\w+)", shown).group(1),
                                    restarts=int(re.search(r"Restarts=(\d+)", shown).group(1)))
                break
        time.sleep(0.5)


def snakemake_preempted(work: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`snakemake` while one running evaluation job is requeued as a cluster preempts it; the run and
    {since: when it started (sacct's -S), requeued: what SLURM said of the preempted job, wall: seconds}."""
    since = time.strftime("%Y-%m-%dT%H:%M:%S")
    stop_event, requeued = threading.Event(), {}
    preempt = threading.Thread(target=_requeue_one_running_evaluation, args=(stop_event, requeued), daemon=True)
    preempt.start()
    start_time = time.time()
    done = snakemake(work, *args)
    stop_event.set()
    return done, {"since": since, "requeued": requeued, "wall": time.time() - start_time}
