"""One round of a chain (DPareto's or a peer's) as the `bo_propose` rule runs it: inside the Snakemake process.

A proposal round is a library call of a fraction of a second; as a fresh interpreter per round
it cost 13-23 s, mostly importing TensorFlow/GPflow (or torch) and tracing the GP graph. The rule
is a `run:` rule and profiles/default sets `force-use-threads`, so Snakemake runs every round as a
thread of its own process: the libraries are imported and the graph traced once per workflow run.
Each evaluation file is likewise read once per workflow run (`read_once`; reading all 256 of
them every round costs 0.5 s), and what a round needs of the one before (DPareto's GP
hyperparameters) is stored in its proposal file. Everything a round depends on is in its input
files, so a resumed or re-run round proposes exactly what an uninterrupted run does.
"""
from __future__ import annotations

import logging
import os
import time

import pandas as pd
import threadpoolctl

from .. import UserError
from ..io import read_provenance
from ..problems import resolve, succeeded
from ..problems.tables import read_frame, write_frame
from ..workflow_support import thread_log
from . import gp

_frames: dict[tuple, pd.DataFrame] = {}
_blas_limited = False


def limit_blas_threads() -> None:
    """BLAS on one thread (the rule's `threads: 1`) for the rest of the process, set once: several
    threads' spin-waiting costs more than it gains at these sizes, and on a busy machine made
    triangular solves 10x slower. threadpoolctl finds the BLAS libraries with dl_iterate_phdr, which
    holds the dynamic loader's lock while its callback waits for the GIL, and a thread importing an
    extension module holds the GIL while dlopen waits for that lock: two chains' rounds starting
    together in one Snakemake process deadlocked that way. So the scan runs once, under the lock
    TensorFlow's import holds (gp.IMPORT_LOCK)."""
    global _blas_limited
    with gp.IMPORT_LOCK:
        if not _blas_limited:
            threadpoolctl.threadpool_limits(1)
            _blas_limited = True


def read_once(path: str) -> pd.DataFrame:
    """A table, read from disk only the first time this process sees this version of the file."""
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _frames:
        _frames[key] = read_frame(path)
    return _frames[key]


def propose_round(*, method, problem: str, definition: dict | None, initial: str, evaluations: list[str],
                  previous: str | None, output: str, log: str, batch_size: int, seed: int, run: int,
                  round_index: int) -> None:
    """Write round `round_index`'s proposal (q = batch_size points) of chain method `method`
    (`bo.propose.DPareto` or a `peers.Peer`) to `output`."""
    start = time.perf_counter()
    limit_blas_threads()   # for the whole (Snakemake) process, whose only BLAS work is these rounds
    with thread_log(log):
        try:
            chosen = resolve(problem, definition)
            # points whose oracle failed carry no objectives: the optimisers never see them
            initial_points = succeeded(read_once(initial))
            evals = succeeded(pd.concat([read_once(initial)] + [read_once(path) for path in evaluations], ignore_index=True))
            points, record = method.round(chosen, evals, batch_size, seed, run, round_index, len(initial_points),
                                          read_provenance(previous) if previous else None)
            logging.getLogger(__name__).info("%s round %d: %d observations, %s, proposal %.2f s", method.name,
                                             round_index, len(evals),
                                             "ML-II " + ("with restarts" if record.get("full_refit") else "refined")
                                             if "full_refit" in record else "refitted", points["proposal_seconds"].iloc[0])
            points.insert(0, "round", round_index)
            points["job_seconds"] = time.perf_counter() - start   # the whole round as Snakemake runs it
            write_frame(points, output, {"problem": problem, "method": method.name, "run": run, "round": round_index,
                                         "observed": len(evals), **record})
        except UserError as exc:
            logging.getLogger(__name__).error("%s", exc)  # into the round's log, as a script job's would be
            raise
