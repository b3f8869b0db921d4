"""Syne Tune's MOASHA (multi-objective asynchronous successive halving; Salinas et al. 2021, Schmucker et
al. 2021) as a chain method: the multi-fidelity optimiser a practitioner would pick to stop trainings on a
privacy-utility front, configured as Syne Tune's documentation recommends (reduction factor 3, grace period
1, one bracket, non-dominated sorting of the objectives, random configurations; max_t the domain's largest
epochs). It minimises (epsilon, error), both reported at every epoch of a training.

With one worker (q = 1) successive halving runs one training at a time: a new configuration trains to the
first rung, and at each rung MOASHA either stops it or lets it go on to the next rung, up to max_t. In the
chain each stretch between rungs is one evaluation that continues the training (`problems.traces.Continuation`),
so MOASHA's stops cost what they save. Each round rebuilds the scheduler by reporting every row so far in
the order they were trained (the peers keep no state between rounds: a resumed chain proposes what an uninterrupted one
does); the initial points are completed trials. A new configuration is sampled from Syne Tune's own domains
with a generator seeded by (seed, trial), which is what MOASHA's random `suggest` does with its own stream.

Syne Tune is installed without its declared dependencies (envs/syne-tune.txt): they serve its other
optimisers (xgboost alone pulls a 350 MB CUDA library), and MOASHA imports none of them.
"""
from __future__ import annotations

import datetime
import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import UserError
from ..bo.resume import NEW_TRAINING
from ..problems.problem import Problem
from ..seeds import derive_seed
from .base import Peer

REDUCTION_FACTOR = 3
GRACE_PERIOD = 1
_CREATED = datetime.datetime(2026, 1, 1)   # trials need a creation time; a fixed one keeps rounds reproducible


def _syne_tune():
    try:
        from syne_tune import config_space
        from syne_tune.backend.trial_status import Trial
        from syne_tune.optimizer.scheduler import SchedulerDecision
        from syne_tune.optimizer.schedulers.multiobjective.moasha import MOASHA
    except ImportError as exc:   # pragma: no cover - the environment installs it
        raise ImportError("The moasha method needs Syne Tune: run envs/setup.sh (it installs envs/syne-tune.txt)") from exc
    return config_space, Trial, SchedulerDecision, MOASHA


@dataclass(frozen=True)
class MOASHAPeer(Peer):
    name = "moasha"
    settings = {"library": "syne-tune 0.16.0", "scheduler": "MOASHA", "reduction_factor": REDUCTION_FACTOR,
                "grace_period": GRACE_PERIOD, "brackets": 1, "multiobjective_priority": "NonDominatedPriority",
                "searcher": "random", "objectives": ["epsilon", "error"]}

    def config_space(self, problem: Problem) -> dict:
        """The problem's domain without the trace axis, as Syne Tune domains (log scale where DPareto's is)."""
        cs = _syne_tune()[0]
        axis = problem.oracle.trace_axis
        space = {}
        for p in problem.domain:
            if p.name == axis:
                continue
            if p.integer:
                space[p.name] = (cs.lograndint if p.log else cs.randint)(int(p.low), int(p.high))
            else:
                space[p.name] = (cs.loguniform if p.log else cs.uniform)(float(p.low), float(p.high))
        return space

    def rungs(self, top: int) -> list[int]:
        """The rung levels below max_t (MOASHA's bracket: grace period x factor^k), then max_t."""
        levels, level = [], GRACE_PERIOD
        while level < top:
            levels.append(int(level))
            level *= REDUCTION_FACTOR
        return levels + [top]

    def round(self, problem: Problem, evals: pd.DataFrame, q: int, seed: int, run: int, round_index: int,
              initial: int, previous: dict | None, context=None) -> tuple[pd.DataFrame, dict]:
        """The next stretch of training MOASHA runs: the running training to its next rung, or a new
        configuration to its first."""
        import time

        if q != 1:
            raise UserError("moasha trains one training at a time; set dpareto.batch_size: 1 for its chain.")
        axis = problem.oracle.trace_axis
        if axis is None or axis not in problem.names:
            raise UserError(f"moasha stops trainings at the epochs of their traces, and {problem.name} has no trace axis; "
                            f"remove moasha from its methods.")
        start = time.perf_counter()
        top = int(problem.bounds(axis)[1])
        running, trials, stopped = self.replay(problem, evals, initial, seed, top)
        rungs = self.rungs(top)
        if running is not None:
            reached = int(running["reached"])
            point = {**running["config"], axis: next(r for r in rungs if r > reached)}
            fields = {"resumes": int(running["index"]), "resumes_seed": int(running["seed"]), "resumes_from": reached,
                      "resumes_evaluation": int(running["evaluation"]),
                      "resumes_replayed": not problem.oracle.resumable}
            fields["cost_axis"] = float(point[axis] - reached) if problem.oracle.resumable else float(point[axis])
        else:
            point = {**self.sample(problem, seed, run, trials), axis: rungs[0]}
            fields = {**NEW_TRAINING, "cost_axis": float(rungs[0])}
        frame = pd.DataFrame([{**self.typed(problem, point), "batch_position": 0, **fields,
                               "stopped_trainings": stopped}])
        frame["proposal_seconds"] = time.perf_counter() - start
        return frame, {"settings": self.settings, "learned_from": len(evals)}

    def _propose(self, problem, evals, q, seed):
        raise NotImplementedError("moasha proposes by round(): a stretch of a training, new or continued")

    def sample(self, problem: Problem, seed: int, run: int, trial: int) -> dict:
        """Trial `trial`'s configuration: a random draw from the config space, its stream seeded by the trial."""
        state = np.random.RandomState(derive_seed(seed, problem.name, self.name, run, "trial", trial) % 2**32)
        return {name: domain.sample(random_state=state) for name, domain in self.config_space(problem).items()}

    def replay(self, problem: Problem, evals: pd.DataFrame, initial: int, seed: int, top: int):
        """MOASHA fed every row so far, training by training in training order: the training still running
        (its last decision CONTINUE below max_t; None: every training stopped or ended), the number of
        trials, and how many it stopped. The initial points' trainings (rows without a chain `evaluation`)
        are completed trials. A round whose rows extend the rows an earlier round of this process fed feeds
        only the new ones to that round's scheduler (the same calls in the same order as feeding them all)."""
        _, Trial, Decision, MOASHA = _syne_tune()
        axis = problem.oracle.trace_axis
        # the rows come in the order they were trained (a chain's files in order); a training's later
        # stretches join its first
        ordered = evals[evals["failure"].isna()] if "failure" in evals else evals
        ordered = ordered.iloc[np.lexsort((ordered[axis].to_numpy(), pd.factorize(ordered["index"])[0]))]
        columns = [ordered[c].to_numpy() for c in ("index", axis, "epsilon", "error", "seed")]
        evaluation = (ordered["evaluation"].fillna(-1).astype(int).to_numpy() if "evaluation" in ordered
                      else np.full(len(ordered), -1))
        keys = list(zip(columns[0].tolist(), columns[1].tolist(), columns[2].tolist(), columns[3].tolist()))
        cache_key = (problem.name, repr(problem.domain), seed, top)
        with _CACHE_LOCK:
            state = _CACHE.get(cache_key)
            if state is None or state.keys != keys[:len(state.keys)]:
                scheduler = MOASHA(self.config_space(problem), metrics=["epsilon", "error"], do_minimize=True,
                                   time_attr=axis, max_t=top, grace_period=GRACE_PERIOD,
                                   reduction_factor=REDUCTION_FACTOR, random_seed=seed % 2**31)
                state = _Replay(scheduler, [], {})
            names = [n for n in problem.names if n != axis]
            configs = ordered[names].to_numpy(object)
            for k in range(len(state.keys), len(keys)):
                index = keys[k][0]
                if index not in state.trials:
                    trial = Trial(trial_id=len(state.trials), config=dict(zip(names, configs[k])), creation_time=_CREATED)
                    np.random.seed(seed % 2**32)   # MOASHA picks a bracket with the global stream (one bracket: no choice)
                    state.scheduler.on_trial_add(trial)
                    state.trials[index] = {"trial": trial, "decision": Decision.CONTINUE, "reached": 0}
                record = state.trials[index]
                if record["decision"] != Decision.STOP:
                    record["decision"] = state.scheduler.on_trial_result(
                        record["trial"], {axis: int(keys[k][1]), "epsilon": float(keys[k][2]), "error": float(keys[k][3])})
                record |= {"reached": max(record["reached"], int(keys[k][1])), "seed": int(columns[4][k]),
                           "evaluation": int(evaluation[k])}
                state.keys.append(keys[k])
            _CACHE[cache_key] = state
            stopped = sum(r["decision"] == Decision.STOP and r["reached"] < top for r in state.trials.values())
            running = None
            if state.trials:
                index, last = next(reversed(state.trials.items()))
                # the initial points (no chain evaluation of their own) are completed trials
                if last["decision"] == Decision.CONTINUE and last["reached"] < top and last["evaluation"] >= 0:
                    running = {"index": index, "seed": last["seed"], "reached": last["reached"],
                               "config": dict(last["trial"].config), "evaluation": last["evaluation"]}
            return running, len(state.trials), stopped


@dataclass
class _Replay:
    scheduler: object
    keys: list          # the (index, axis value, epsilon, error) rows fed, in order
    trials: dict        # training index -> its Trial, last decision, axis value reached, seed, evaluation


_CACHE: dict[tuple, _Replay] = {}
_CACHE_LOCK = threading.Lock()
