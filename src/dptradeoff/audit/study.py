"""The audit study: for a problem's points (its front's, or given hyperparameters), the audited lower
bound on epsilon at 95 % confidence beside the proven epsilon (docs/audit.md).

Which audit a problem gets is decided by what its oracle is: the built-in linear DP-SGD/DP-Adam trainer
gets the white-box audit (`LinearWhiteBox`: every step's release seen, a canary on a coordinate of its
own), the built-in MLP with SGD the white-box audit with a Dirac gradient canary (`TorchWhiteBox`); any
other oracle with the release interface and a per-example `losses` gets the black-box one-run
audit (`audit.blackbox`). A row whose lower bound exceeds its proven epsilon is a proof (at the stated
confidence) that the trainer or its accounting does not do what the accountant assumes: `violation` says
so in one sentence, which the table, the report and the CLI print.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import UserError
from ..problems.problem import Problem
from ..release.trainers import oracle_target
from . import bounds

AUDIT_COLUMNS = ("epsilon", "epsilon_lb", "estimator", "confidence", "delta", "audit", "trainings",
                 "epsilon_lb_other", "estimator_other", "broken_premises", "detail", "seconds")


@dataclass(frozen=True)
class AuditSettings:
    runs: int = 200               # white-box: trainings per hypothesis (with and without the canary)
    front_points: int = 3         # the front's points audited, spread over its epsilons
    confidence: float = bounds.CONFIDENCE
    canaries: int = 1000          # black-box one-run: canaries in the one training
    guesses: int = 200            # black-box one-run: canaries whose membership is guessed

    @classmethod
    def from_config(cls, config: dict) -> "AuditSettings":
        entry = dict(config.get("audit", {}))
        return cls(**{k: entry[k] for k in ("runs", "front_points", "confidence", "canaries", "guesses") if k in entry})


class LinearWhiteBox:
    """The white-box audit of the built-in linear trainer (`whitebox`): `runs` trainings with the canary
    and `runs` with its replace-one neighbour, every step's release on the canary's coordinate seen, and
    every step's lot. The quoted bound is the composed-step bound (`composed`), the assumption-free
    Clopper-Pearson bound on the run-level score beside it."""
    name = "white-box (every step's release and lot; canary on a coordinate of its own)"

    def __init__(self, oracle):
        self.oracle = oracle

    def audit(self, problem: Problem, point: dict, data, rng, settings: AuditSettings) -> dict:
        from . import whitebox

        hp = self.oracle.hyper(point)
        trained = whitebox.train_and_score(data.x_train, data.y_train, self.oracle.loss, self.oracle.optimizer, hp,
                                           settings.runs, rng)
        n = len(data.y_train) + 1
        return _quoted(problem, point, n, hp, trained, rng, settings, self.name,
                       f"{trained.steps} steps, lots of {trained.sampling_rate:.3g} of the {n} rows (the data plus the "
                       f"canary, feature {trained.canary_norm:.3g}), the canary's two gradients at the clipping norm "
                       f"in {trained.clipped_share:.0%} of steps")


class TorchWhiteBox:
    """The white-box audit of the built-in MLP trainer with plain SGD (`torch_whitebox`): a Dirac gradient
    canary on one weight, `runs` trainings each way, every step's lot seen: the composed-step bound quoted,
    Clopper-Pearson beside it."""
    name = "white-box (every step's release and lot; Dirac gradient canary)"

    def __init__(self, oracle):
        self.oracle = oracle

    def audit(self, problem: Problem, point: dict, data, rng, settings: AuditSettings) -> dict:
        from . import torch_whitebox

        hp = self.oracle.hyper(point)
        trained = torch_whitebox.train_and_score(torch_whitebox.mlp_trainer(self.oracle.architecture), data.x_train,
                                                 data.y_train, hp, settings.runs, int(rng.integers(2**62)))
        n = len(data.y_train) + 1
        return _quoted(problem, point, n, hp, trained, rng, settings, self.name,
                       f"{trained.steps} steps, lots of {trained.sampling_rate:.3g} of the {n} rows (the data plus the "
                       f"canary)")


def _quoted(problem, point, n, hp, trained, rng, settings, name, what) -> dict:
    """The row of a white-box audit: the composed-step bound quoted (it assumes the accountant's model), the
    assumption-free Clopper-Pearson bound on the run-level score beside it, and the accountant's premises the
    step bounds prove broken (`composed.premise_bounds`; the canary's contribution is claimed at most the
    clipping norm)."""
    from . import composed

    quoted, _ = composed.composed_bound(trained.seen, problem.delta, settings.confidence)
    strict = composed.premise_bounds(trained.seen, settings.confidence)
    broken = strict.broken_premises(2.0 * hp.clip * hp.noise, hp.lot_size / n, hp.clip)
    other = bounds.clopper_pearson(trained.scores_in, trained.scores_out, problem.delta, settings.confidence, rng)
    return {"epsilon": problem.oracle.epsilon(point, n=n, delta=problem.delta), "epsilon_lb": quoted.epsilon_lb,
            "estimator": quoted.estimator, "confidence": settings.confidence, "delta": problem.delta, "audit": name,
            "trainings": 2 * settings.runs, "epsilon_lb_other": other.epsilon_lb,
            "estimator_other": other.estimator + " (assumes nothing)", "broken_premises": "; ".join(broken),
            "detail": f"{quoted.detail}; {what}"}


class BlackBoxOneRun:
    """The black-box one-run audit (`audit.blackbox`, Steinke, Nasr & Jagielski 2023): one training with
    `canaries` input-space canaries, each in with probability 1/2, membership guessed from the model's
    per-example losses."""
    name = "black-box one run (input canaries, membership from the final model's losses)"

    def __init__(self, target):
        self.target = target

    def audit(self, problem: Problem, point: dict, data, rng, settings: AuditSettings) -> dict:
        from . import blackbox

        result = blackbox.one_run(self.target, point, data, rng, canaries=settings.canaries, guesses=settings.guesses,
                                  delta=problem.delta, confidence=settings.confidence)
        # the proven epsilon of the training the audit ran: under add/remove it had fewer rows (canaries out)
        return {"epsilon": problem.oracle.epsilon(point, n=result.training_rows, delta=problem.delta),
                "epsilon_lb": result.epsilon_lb, "estimator": result.method, "confidence": settings.confidence,
                "delta": problem.delta, "audit": self.name, "trainings": result.trainings,
                "epsilon_lb_other": result.epsilon_lb_fdp,
                "estimator_other": "f-DP one run (Mahloujifar et al. 2024): a statement about the Gaussian family",
                "broken_premises": "",
                "detail": f"{result.neighbouring}: {result.detail}"}


def auditor_for(problem: Problem):
    """The audit a problem's oracle gets (module doc), or one sentence saying what it lacks."""
    from ..problems.builtin import LinearDPSGD, MLPDPSGD

    target = oracle_target(problem)
    if isinstance(target, LinearDPSGD):
        return LinearWhiteBox(target)
    if isinstance(target, MLPDPSGD) and target.optimizer == "sgd":
        return TorchWhiteBox(target)
    missing = [m for m in ("train", "losses") if not callable(getattr(target, m, None))]
    if missing:
        raise UserError(f"{problem.name} cannot be audited: its oracle has no {' or '.join(m + '()' for m in missing)}; "
                        f"add train(point, data, rng) and losses(model, data) returning each test row's loss "
                        f"(docs/audit.md).")
    return BlackBoxOneRun(target)


def front_points(problem: Problem, front: pd.DataFrame, count: int) -> list[dict]:
    """`count` points of the front (increasing epsilon), spread evenly over its ranks, the largest epsilon
    always among them."""
    if front.empty or count <= 0:
        return []
    ranks = sorted({int(round(r)) for r in np.linspace(len(front) - 1, 0, min(count, len(front)))})
    return [problem.check({name: front.iloc[r][name] for name in problem.names}) for r in ranks]


def audit(problem: Problem, points: list[dict], data, rng: np.random.Generator, settings: AuditSettings) -> pd.DataFrame:
    """One row per point: its hyperparameters, proven epsilon, audited epsilon_lb and how it was audited.
    Each row's bound is at confidence 1 - (1 - settings.confidence) / (number of points) (Bonferroni), so
    the table's bounds hold together at settings.confidence: a violation anywhere in it is a claim at that
    confidence, however many points were audited."""
    auditor = auditor_for(problem)
    each = dataclasses.replace(settings, confidence=1 - (1 - settings.confidence) / max(1, len(points)))
    rows = []
    for point in points:
        start = time.perf_counter()
        row = auditor.audit(problem, point, data, rng, each)
        rows.append({**point, **row, "seconds": time.perf_counter() - start})
    frame = pd.DataFrame(rows)
    return frame[[*problem.names, *AUDIT_COLUMNS]]


def joint_confidence(table: pd.DataFrame) -> float:
    """The confidence at which all of a table's bounds hold together (each row's is Bonferroni-corrected)."""
    return 1 - (1 - table["confidence"].iloc[0]) * len(table)


def violation(problem_name: str, table: pd.DataFrame) -> str:
    """One loud sentence where a point's audited lower bound exceeds its proven epsilon, else ""."""
    over = table[table["epsilon_lb"] > table["epsilon"]]
    premises = table["broken_premises"].fillna("").astype(str) if "broken_premises" in table else pd.Series([""])
    broken = premises[premises != ""]
    if over.empty and broken.empty:
        return ""
    if over.empty:
        return (f"PRIVACY VIOLATION: {problem_name}'s audit proves (at {joint_confidence(table):.0%} confidence, jointly "
                f"over its {len(table)} audited points) that its trainer does not do what its accountant assumes at "
                f"{len(broken)} of them: {broken.iloc[0]}; its epsilons may still hold where the accountant's bound has "
                f"room, but the trainer is wrong, so do not use its epsilons until fixed (docs/audit.md).")
    row = over.sort_values("epsilon_lb", ascending=False).iloc[0]
    return (f"PRIVACY VIOLATION: {problem_name}'s audit proves (at {joint_confidence(table):.0%} confidence, jointly over its "
            f"{len(table)} audited points) that {len(over)} of them are not private as claimed, e.g. epsilon >= "
            f"{row['epsilon_lb']:.3g} where the oracle claims {row['epsilon']:.3g}; its trainer or its epsilon() is "
            f"wrong, so do not use its epsilons until fixed (docs/audit.md).")


def table_note(problem_name: str, table: pd.DataFrame, config_label: str) -> str:
    """The audit table's note: what the numbers are and are not, and the violation sentence where there is one."""
    warning = violation(problem_name, table)
    return ((warning + " " if warning else "") +
            f"{problem_name}: epsilon is the accountant's proven upper bound (a guarantee, as far as the trainer does "
            f"what it assumes); epsilon_lb is an audited lower bound: with the stated confidence the training is not "
            f"(eps, delta)-DP for any eps below it (confidence: each row's, Bonferroni-corrected so that the table's "
            f"bounds hold together at {joint_confidence(table):.0%}). It is a measurement, "
            f"not a guarantee, and a small epsilon_lb does "
            f"not show the training private: it bounds only what this audit's test can see (docs/audit.md). "
            f"estimator: the quoted bound's; epsilon_lb_other: the other estimator's, for comparison. "
            f"Config: {config_label}.")


def audit_study(problem: Problem, frames: dict, given: list[dict], data, rng: np.random.Generator,
                settings: AuditSettings) -> tuple[pd.DataFrame, pd.Series]:
    """The audit table of a problem's front points (`front_points` of the front of every point in `frames`,
    {method: its evaluations}) and the `given` points, and each row's measured utility (NaN where the study
    did not evaluate it): what the `audit` rule and `dptradeoff audit` write."""
    from ..bo.query import front
    from ..study import every_point

    measured = front(problem, every_point(frames)) if frames else pd.DataFrame(columns=[*problem.names, "utility"])
    # given points may lie outside the search space (e.g. lots of the whole dataset): the audit is of the trainer
    points = front_points(problem, measured, settings.front_points) + [problem.check(dict(p), in_range=False)
                                                                       for p in given]
    if not points:
        raise UserError(f"No point of {problem.name} to audit: its study has no evaluated point and none was given; "
                        f"build its study first, or give hyperparameters (--point name=value ...).")
    table = audit(problem, points, data, rng, settings)
    keys = list(problem.names)
    known = measured[keys + ["utility"]].drop_duplicates(keys) if len(measured) else None
    utilities = (table[keys].merge(known, on=keys, how="left")["utility"] if known is not None
                 else pd.Series(np.nan, index=table.index))
    return table, utilities


def recorded_violation(problem_name: str, csv_path: str) -> str:
    """`violation` of an audit table written earlier (tables/audit-<problem>.csv), "" where there is none."""
    import os

    from ..stats.tables import read

    return violation(problem_name, read(csv_path)) if os.path.exists(csv_path) else ""
