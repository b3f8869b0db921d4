"""A chain's steps (DPareto's or a peer's) as Snakemake runs them locally: inside its own process.

`propose_round` is one round of the `bo_propose` rule, `evaluate_point` one evaluation of the
`bo_evaluate` rule (`propose_in_rule` and `evaluate_in_rule` call them with the rule's objects). As a script job each evaluation cost ~2.5 s of interpreter start-up, imports
(numba, pandas, dptradeoff) and data loading around a training that on the default config takes
~0.1 s; in-process the libraries are imported and each dataset read and prepared once per
workflow run (`prepared_data`). The linear trainer's numba kernel releases the GIL and torch does
in its operations, so two chains' evaluations train on two cores at once. Oracles that do not
declare themselves `thread_safe` (user oracles, unless they say so) are called by one thread at a
time. On a cluster each evaluation is still a job of its own (the rule is not a localrule).

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

import contextlib
import logging
import os
import threading
import time
from collections import defaultdict

import pandas as pd
import threadpoolctl

from .. import UserError, paths
from ..io import read_provenance
from ..problems import resolve, succeeded
from ..problems.evaluate import evaluate, load_data, replay_provenance, source_label
from ..problems.tables import read_frame, write_frame
from ..workflow_support import sentence_only, thread_log
from . import batch_rounds, gp
from .propose import DPareto

_frames: dict[tuple, pd.DataFrame] = {}
_blas_limited = False
_torch_limited = False
_data: dict[tuple, object] = {}
_data_lock = threading.Lock()
_oracle_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)


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


def limit_torch_threads() -> None:
    """torch on one thread for the rest of the process, before any evaluation trains with it: a
    script job gets this from OMP_NUM_THREADS, and the thread count can change a float sum's order."""
    global _torch_limited
    with gp.IMPORT_LOCK:
        if not _torch_limited:
            import torch

            torch.set_num_threads(1)
            _torch_limited = True


def read_once(path: str) -> pd.DataFrame:
    """A table, read from disk only the first time this process sees this version of the file."""
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _frames:
        _frames[key] = read_frame(path)
    return _frames[key]


def propose_round(*, method, problem: str, definition: dict | None, initial: str, evaluations: list[str],
                  previous: str | None, output: str, log: str, batch_size: int, seed: int, run: int,
                  round_index: int, utility_floor: float | None = None, steering: dict | None = None,
                  round_seconds: float | None = None, pinned_batch_sizes: list[int] | None = None) -> None:
    """Write round `round_index`'s proposal (q = batch_size points) of chain method `method`
    (`bo.propose.DPareto` or a `peers.Peer`) to `output`. A method that `needs_context` (DPareto with
    exact privacy or a region acquisition) gets the training rows and the error floor
    (`utility_floor` where the config states it) of the problem's prepared data, and what steers it
    (`steering`: `chain_context`). DPareto's sequential chain of an untraced problem proposes a batch where a point
    is cheaper to evaluate than a round to choose (`batch_rounds`; `round_seconds`: the chain's seconds a round), its
    size measured, or `pinned_batch_sizes[round_index]` where given (a replay of a run's recorded `batch_size`s: the
    sizes otherwise depend on the machine and its load)."""
    start = time.perf_counter()
    limit_blas_threads()   # for the whole (Snakemake) process, whose only BLAS work is these rounds
    with thread_log(log):
        try:
            chosen = resolve(problem, definition)
            # points whose oracle failed carry no objectives: the optimisers never see them
            initial_points = succeeded(read_once(initial))
            everything = pd.concat([read_once(initial)] + [read_once(path) for path in evaluations], ignore_index=True)
            evals = succeeded(everything)
            context = (chain_context(chosen, utility_floor, steering=steering)
                       if getattr(method, "needs_context", False) else None)
            batching = (isinstance(method, DPareto) and method.settings.batch_rounds and not method.settings.paper
                        and batch_size == 1 and chosen.oracle.trace_axis is None)
            if batching:
                pinned = bool(pinned_batch_sizes) and round_index < len(pinned_batch_sizes)
                if pinned:
                    size = int(pinned_batch_sizes[round_index])
                else:   # the first round has nothing measured: one point
                    size = batch_rounds.batch_size(float(read_once(previous)["job_seconds"].iloc[0]),
                                                   batch_rounds.point_seconds(evaluations, read_once),
                                                   round_seconds) if previous is not None else 1
                points, record = batch_rounds.propose_batch(method, chosen, evals, size, seed, run, round_index,
                                                            len(initial_points), read_provenance(previous) if previous else None,
                                                            context, len(everything))
                record["batch_size_pinned"] = pinned
            else:
                points, record = method.round(chosen, evals, batch_size, seed, run, round_index, len(initial_points),
                                              read_provenance(previous) if previous else None, context=context)
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


def chain_context(problem, utility_floor: float | None = None, data_dir: str = paths.DATA_DIR,
                  steering: dict | None = None):
    """The training rows and error floor of the problem's prepared data (`bo.propose.Context`), and what steers
    the chain: `steering` {"region": the region rule (`stats.region.RegionRule`), "queries": {"epsilon": [...],
    "utility": [...]}} (None: the settings' fixed region, no queries)."""
    from .propose import Context

    data = prepared_data(problem, data_dir)
    steering = steering or {}
    return Context(data.n_train if data is not None else None, problem.error_floor(data, utility_floor),
                   steering.get("region"), declared_queries(steering.get("queries")))


def declared_queries(queries: dict | None) -> tuple[tuple[str, float], ...]:
    """problems.<name>.queries as (kind, target) pairs, "eps" before "utility", each in its declared order."""
    queries = queries or {}
    return tuple((kind, float(t)) for key, kind in (("epsilon", "eps"), ("utility", "utility"))
                 for t in queries.get(key, []))


def prepared_data(problem, data_dir: str = paths.DATA_DIR):
    """The problem's dataset as its oracle prepares it (`load_data`), loaded once per process and
    version of the dataset's files."""
    if problem.dataset is None:
        return None
    files = [paths.data(problem.dataset, part, data_dir) for part in ("train", "test")]
    key = (problem.name, repr(problem), *((os.path.abspath(f), os.stat(f).st_mtime_ns) for f in files))
    with _data_lock:   # one thread loads, the others wait for it rather than loading it too
        if key not in _data:
            _data[key] = load_data(problem, data_dir)
        return _data[key]


def continuation(proposed: pd.Series, initial: str, evaluations_folder: str, repeats: int):
    """The training a proposed point continues (`problems.traces.Continuation`; None: a new training): its
    index, seed and the axis value reached are in the proposal (`resumes`, `resumes_seed`, `resumes_from`),
    its state in the evaluation file that holds its last segment (`resumes_evaluation`; -1: the initial
    points' file `initial`). No state there: the training is replayed from its seed."""
    if "resumes" not in proposed or pd.isna(proposed["resumes"]) or int(proposed["resumes"]) < 0:
        return None
    from ..io import read_training_states
    from ..problems.traces import Continuation

    source = int(proposed["resumes_evaluation"])
    path = initial if source < 0 else os.path.join(evaluations_folder, f"{source}.parquet")
    index = int(proposed["resumes"])
    return Continuation(index, int(proposed["resumes_seed"]), int(proposed["resumes_from"]), repeats,
                        read_training_states(path).get(index))


def evaluate_point(*, method: str, problem: str, definition: dict | None, conversion: str, proposal: str, output: str,
                   log: str, chain: str, index: int, batch_size: int, repeats: int, seed: int, run: int,
                   initial_points: int, traces=None, initial: str | None = None) -> None:
    """Evaluate point `index` of chain `chain` (the `index % batch_size`-th of its round's proposal
    file `proposal`) with the problem's oracles and write its row (with `traces`, its trace's rows:
    `problems.traces`) to `output`. A point that continues a training (`continuation`) reads the
    training's state from the earlier evaluation file (or `initial`, the chain's initial points) that
    holds it. A killed traced evaluation writes nothing and reruns whole."""
    start = time.perf_counter()
    with _evaluation(problem, definition, conversion, log) as (chosen, data, oracle_lock):
        round_points = read_once(proposal)   # a round's q evaluations share its file
        if "point_index" in round_points:   # a batch round (bo.batch_rounds): its whole batch, in this job
            with oracle_lock:
                rows = evaluate(chosen, round_points[chosen.names], data, repeats, seed, method, run,
                                int(round_points["point_index"].iloc[0]))
            rows["batch_size"] = len(round_points)
        else:
            proposed = round_points.iloc[index % batch_size]
            point = round_points.iloc[[index % batch_size]][chosen.names]
            continues = continuation(proposed, initial, os.path.dirname(output), repeats)
            with oracle_lock:
                rows = evaluate(chosen, point, data, repeats, seed, method, run, initial_points + index, traces,
                                continues)
        rows["round"] = int(round_points["round"].iloc[0])
        rows["evaluation"] = index   # the chain's evaluation file the rows are in (the initial points: -1)
        rows["job_seconds"] = time.perf_counter() - start   # the whole evaluation as Snakemake runs it
        write_frame(rows, output, {"problem": problem, "method": method, "run": run, "chain": chain,
                                   "repeats": repeats, "definition": definition,
                                   "source_label": source_label(chosen, data), **replay_provenance(chosen)})


@contextlib.contextmanager
def _evaluation(problem: str, definition: dict | None, conversion: str, log: str):
    """(the problem resolved, its prepared data, its oracle's lock or none where it is thread-safe) for an
    evaluation run as a thread of this process, its records in the rule's log; a UserError logged there too."""
    limit_blas_threads()
    limit_torch_threads()
    with thread_log(log):
        try:
            with gp.IMPORT_LOCK:   # a user oracle's module is imported here the first time
                chosen = resolve(problem, definition, conversion)
            lock = _oracle_locks[chosen.name] if not chosen.oracle.thread_safe else contextlib.nullcontext()
            yield chosen, prepared_data(chosen), lock
        except UserError as exc:
            logging.getLogger(__name__).error("%s", exc)
            raise


def evaluate_batch(*, method: str, problem: str, definition: dict | None, conversion: str, points: str, output: str,
                   log: str, batch: int, points_per_job: int, repeats: int, seed: int, run: int, traces=None) -> None:
    """Evaluate batch `batch` of a fanned-out method's points (random, uniform, a grid, Table 2's comparison)
    and write its rows to `output`: the `evaluate_batch` rule, run in this process as `evaluate_point` is (as a
    script job each of `all`'s 158 batches paid ~2 s of interpreter start-up and imports, 37 % of their time)."""
    from ..problems.batches import Batches

    with _evaluation(problem, definition, conversion, log) as (chosen, data, oracle_lock):
        batches = Batches(points_per_job)
        chosen_points = batches.take(read_once(points), batch).copy()   # the cached frame stays as read
        with oracle_lock:
            rows = evaluate(chosen, chosen_points, data, repeats, seed, method, run, batches.first(batch), traces)
        write_frame(rows, output, {"problem": problem, "method": method, "run": run, "definition": definition,
                                   "repeats": repeats, "seed": seed, "source_label": source_label(chosen, data),
                                   **replay_provenance(chosen)})


def evaluate_batch_in_rule(wildcards, input, output, params, log) -> None:
    """The body of the `evaluate_batch` run: rule."""
    with sentence_only():
        evaluate_batch(method=wildcards.method, problem=wildcards.problem, definition=params.problem,
                       conversion=params.conversion, points=input.points, output=output[0], log=log[0],
                       batch=int(wildcards.batch), points_per_job=params.points_per_job, repeats=params.repeats,
                       seed=params.seed, run=int(wildcards.run), traces=params.traces)


def propose_in_rule(wildcards, input, output, params, log) -> None:
    """The body of the `bo_propose` run: rule: Snakemake's objects in, `propose_round`'s arguments out."""
    with sentence_only():
        propose_round(method=params.method, problem=wildcards.problem, definition=params.problem, initial=input.initial,
                      evaluations=list(input.evals), previous=input.previous[0] if input.previous else None,
                      output=output[0], log=log[0], batch_size=params.batch_size, seed=params.seed,
                      run=int(wildcards.run), round_index=int(wildcards.round), utility_floor=params.utility_floor,
                      steering=params.steering, round_seconds=params.round_seconds,
                      pinned_batch_sizes=params.pinned_batch_sizes)


def evaluate_in_rule(wildcards, input, output, params, log) -> None:
    """The body of the `bo_evaluate` run: rule."""
    with sentence_only():
        evaluate_point(method=params.method, problem=wildcards.problem, definition=params.problem,
                       conversion=params.conversion, proposal=input.proposal, output=output[0], log=log[0],
                       chain=wildcards.chain, index=int(wildcards.i), batch_size=params.batch_size,
                       repeats=params.repeats, seed=params.seed, run=int(wildcards.run),
                       initial_points=params.initial_points, traces=params.traces, initial=input.initial)
