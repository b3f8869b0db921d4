"""The workflow's bookkeeping steps as library calls that Snakemake runs as threads of its own process
(`run:` rules, profiles/default's `force-use-threads`): a method's points (random, uniform, grid), a
chain's initial rows, and the gathers of evaluation files into one table.

Each takes milliseconds. As a script job each cost ~2.5 CPU-seconds of interpreter start-up and
imports, and the default `all` runs 75 of them (docs/outputs.md#cost). Each step logs to its rule's
log file (`thread_log`) and ends with one sentence on a UserError (`sentence_only`).
"""
from __future__ import annotations

import contextlib
import logging

import pandas as pd

from . import UserError
from .baselines.grid import grid
from .baselines.random_search import sample, sample_uniform
from .io import read_provenance, read_training_states
from .problems import resolve
from .problems.tables import concat, read_frame, write_frame
from .seeds import rng
from .workflow_support import sentence_only, thread_log

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _step(log_path: str, what: str):
    """The step's log and error handling, as a script job's `rule_context` gives it."""
    with sentence_only(), thread_log(log_path):
        try:
            yield
        except UserError as exc:
            log.error("%s", exc)   # into the rule's log, as a script job's would be
            raise
        log.info("%s", what)


def random_points(*, problem: str, definition: dict | None, method: str, run: str, points: int, seed: int,
                  output: str, log_path: str) -> None:
    """`points` points drawn from the problem's sampling distributions (random run, Table 2's sample)."""
    with _step(log_path, f"{points} random points of {problem} ({method} run {run})"):
        chosen = resolve(problem, definition)
        frame = sample(chosen, points, rng(seed, problem, method, run, "sample"))
        write_frame(frame, output, {"problem": problem, "method": method, "run": int(run), "definition": definition,
                                    "seed": seed})


def uniform_points(*, problem: str, definition: dict | None, run: str, points: int, seed: int, output: str,
                   log_path: str) -> None:
    """`points` points uniform over the problem's domain (the naive baseline of Fig. 5)."""
    with _step(log_path, f"{points} uniform points of {problem} (run {run})"):
        chosen = resolve(problem, definition)
        frame = sample_uniform(chosen, points, rng(seed, problem, "uniform", run, "sample"))
        write_frame(frame, output, {"problem": problem, "method": "uniform", "run": int(run), "definition": definition,
                                    "seed": seed})


def grid_points(*, problem: str, definition: dict | None, k: str, spacing: str, output: str, log_path: str) -> None:
    """The problem's grid of k values per searched axis."""
    with _step(log_path, f"grid{k} of {problem}"):
        frame = grid(resolve(problem, definition), int(k), spacing)
        write_frame(frame, output, {"problem": problem, "method": f"grid{k}", "definition": definition,
                                    "spacing": spacing})


def initial_rows(*, inputs: list[str], initial_points: int, output: str, log_path: str) -> None:
    """The first k0 evaluations of the random run: shared by random sampling and DPareto (paper 001 §4);
    with traces, every row of their trainings."""
    with _step(log_path, f"the first {initial_points} points of {len(inputs)} evaluation files"):
        evaluated = pd.concat([read_frame(p) for p in inputs], ignore_index=True)
        initial = evaluated[evaluated["index"] < initial_points].copy()
        # the states of their trainings, which a chain may continue (problems.evaluate)
        states = {i: state for p in inputs for i, state in read_training_states(p).items() if i < initial_points}
        initial.attrs["training_states"] = states
        write_frame(initial, output, {**read_provenance(inputs[0]), "method": "dpareto-initial"})


def gather(*, inputs: list[str], output: str, log_path: str) -> None:
    """The evaluation files of a run, one table in order."""
    with _step(log_path, f"{len(inputs)} evaluation files gathered"):
        concat(list(inputs), output)
