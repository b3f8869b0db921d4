"""What every Snakemake script and `run:` rule needs: logging to the rule's log file and one-sentence user errors."""
from __future__ import annotations

import contextlib
import logging
import sys
import threading

from . import UserError


@contextlib.contextmanager
def rule_context(snakemake, timestamps: bool = True):
    """Log to the rule's log file (and stderr); a UserError ends the job with its one sentence, no traceback.
    `timestamps=False`: lines without the time (a release's, whose spacing would reveal its number of trials)."""
    handlers = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        handlers.append(logging.FileHandler(str(snakemake.log[0]), mode="w"))
    logging.basicConfig(level=logging.INFO, format=("%(asctime)s " if timestamps else "") + "%(name)s: %(message)s",
                        handlers=handlers, force=True)
    try:
        yield
    except UserError as exc:
        logging.getLogger("dptradeoff").error("%s", exc)
        sys.exit(1)


@contextlib.contextmanager
def thread_log(path: str | None):
    """For library calls that Snakemake runs as threads of its own process (`run:` rules): this
    thread's records of the dptradeoff loggers go to the rule's log file, other jobs' do not."""
    if not path:
        yield
        return
    handler = logging.FileHandler(str(path), mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
    me = threading.get_ident()
    handler.addFilter(lambda record: record.thread == me)
    logger = logging.getLogger("dptradeoff")
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()


def limit_threads(threads: int) -> None:
    """Pin BLAS/OpenMP/torch to the job's `threads:` so parallel jobs do not oversubscribe the cores.
    Call before numpy or torch are imported."""
    import os

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)  # torch reads OMP_NUM_THREADS when it is imported


def job_seconds() -> float:
    """Wall seconds since this process started: the whole job, interpreter start-up included."""
    import time

    import psutil

    return time.time() - psutil.Process().create_time()


@contextlib.contextmanager
def sentence_only():
    """A UserError raised afresh, so Snakemake shows its sentence (also in the job's log) instead of
    the library's traceback (for `run:` rules)."""
    try:
        yield
    except UserError as exc:
        raise UserError(str(exc)) from None
