"""A release end to end: the private rows and their roles, the candidates from the tuning front, the
accounting plan (eps0 and the total), the private selection, and the released model's single test.

Roles of the data (each stated in every output):
- tuning rows: what the front was characterised on (a split of the training rows, given up, or a
  problem on public data): not protected, not counted;
- private rows: the rest of the training rows, split by a seeded permutation into training rows (every
  trial trains on them) and validation rows (every trial's DP score): protected by the total;
- test rows: the dataset's test split, touched once, by the released model: its utility is a
  measurement, not covered by the total (publish it only if the test rows are public).
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from .. import UserError, __version__, exact_noise, paths, secure_random
from ..io import atomic_path, write_frame
from ..privacy.accountant import Accountant
from ..problems.evaluate import load_data, seedable
from ..problems.oracle import Data
from ..problems.problem import Problem
from ..problems.rows import RowSplit
from ..seeds import rng as derived_rng
from . import accounting, candidates as candidate_points
from .selection import random_stopping
from .settings import ReleaseSettings, SplitTuning, SubsampledTuning
from .trainers import calibrated, check_releasable, oracle_target, training_event, weights

log = logging.getLogger(__name__)

NOT_COVERED = {
    False: ("not covered by the total: the test utility (measured on the test rows) and everything about the "
            "tuning rows; the bound assumes the number of trials K stays hidden: {where}"),
    True: ("not covered by the total: the test utility (measured on the test rows); the bound assumes the number of "
           "trials K stays hidden: {where}"),
}
COVERS = {
    False: "every trial's training on the private training rows, every trial's noisy score on the private validation "
           "rows, and the selection of the best trial (the released model and its hyperparameters)",
    True: "the search (every trial's training and noisy score on a secret subsample of the private rows, and the "
          "selection of the best trial's hyperparameters) and the released model's training on every private row",
}
NEIGHBOURS = {
    False: "per part: neighbouring private datasets differ in one row of the training rows or one row of the validation "
           "rows (the split, by position and seed, and the row counts are treated as public)",
    True: "neighbouring private datasets differ in one row, replaced in its place (the row counts are treated as public; "
          "the subsample's rows are secret, its split into training and validation by position and seed)",
}
ACCOUNTING = {
    False: "RDP: trial = random choice among the candidates (largest RDP at each order) of training + Gaussian score; "
           "RepeatAndSelectDpEvent (Papernot & Steinke 2022, Thm 2); ",
    True: "RDP: trial = random choice among the candidates (largest RDP at each order) of training + Gaussian score on "
          "the subsample; RepeatAndSelectDpEvent (Papernot & Steinke 2022, Thm 2) on it, amplified by the subsampling "
          "without replacement (WBK19 Thm 9); composed with the final training (the largest RDP of the candidates' at "
          "each order); ",
}
KEEPING_K = {
    "config-seed": "this experiment keeps K, the run time (which reveals K) and a non-private reference apart, in "
                   "diagnostics.json: keep that file private",
    "os": "no output states K, the run time or the number of trainings, and no non-private reference is made",
}
RANDOMNESS = {
    "config-seed": "every draw (K, the candidates drawn, DP-SGD's lots and noise, the score noise) derives from the "
                   "config's seed, so anyone holding the config and the data can replay it: an experiment, not a "
                   "release (set release.randomness: os)",
    "os": "the selection's and the trainings' draws (K, the candidates drawn, the lots, the noise, the initialisation, "
          "the score noise) come from AES-128 in counter mode keyed with 128 bits of OS entropy, not recorded; the score's "
          "and the built-in trainers' noise is sampled exactly on a grid, the accounted noise rounded (docs/release.md); the "
          "row roles (tuning, training, validation) are the config seed's, as the tuning study's",
}


@dataclass
class PrivateData:
    training: Data      # x_train/y_train: the rows every trial trains on
    validation: Data    # x_test/y_test: the rows every trial's DP score is measured on
    test: Data          # x_test/y_test: the dataset's test rows (the released model's single test)
    description: str
    rows: Data | None = None   # x_train/y_train: every private row (a subsampled search's final training)


def private_data(problem: Problem, settings: ReleaseSettings, data_dir: str = paths.DATA_DIR) -> PrivateData:
    """The release problem's private rows (all training rows, or those outside the tuning split), as
    its oracle prepares them, split into training and validation rows by a seeded permutation."""
    if isinstance(settings.tuning, SplitTuning):
        problem = replace(problem, rows=RowSplit(settings.tuning.fraction, settings.split_seed(), "private",
                                                 settings.tuning.holdout))
    data = load_data(problem, data_dir)
    if data is None:
        raise UserError(f"{problem.name} has no dataset of the pipeline, so it has no private rows to release a model "
                        f"of; give it a `dataset:`.")
    n = data.n_train
    n_val = int(round(settings.validation * n))
    if not 2 <= n_val <= n - 1:
        raise UserError(f"release.validation = {settings.validation} of {n} private rows leaves no training or no "
                        f"validation row; choose a share between {2 / n:.3g} and {1 - 1 / n:.3g}.")
    order = derived_rng(settings.seed, "release-validation", settings.problem).permutation(n)
    val, train = np.sort(order[:n_val]), np.sort(order[n_val:])
    labels = data.y_train is not None   # a dataset of features only (a statistic's release) has none
    training = replace(data, x_train=data.x_train[train], y_train=data.y_train[train] if labels else None)
    validation = replace(data, x_test=data.x_train[val], y_test=data.y_train[val] if labels else None)
    if isinstance(settings.tuning, SubsampledTuning):
        m = int(round(settings.tuning.subsample * n))
        m_val = int(round(settings.validation * m))
        rows = (f"private rows: {n}, the search on a secret random {m - m_val} training + {m_val} validation of them, "
                f"the released model trained on all {n}")
    else:
        rows = f"private rows: {len(train)} training + {n_val} validation"
    return PrivateData(training, validation, data, f"{data.source_label}; {rows}; test rows: {len(data.x_test)}", data)


@dataclass
class Candidates:
    """Where the candidates come from: their points, (front epsilon, front utility) and origin each, the
    front they were chosen from (None where the tuning is private), and the record's `tuning` entry."""
    points: list
    values: list
    origins: list
    front: pd.DataFrame | None
    beat_trivial: bool
    tuning: dict


def front_candidates(problem: Problem, tuning_problem: Problem, tuning_evaluations: pd.DataFrame,
                     settings: ReleaseSettings, data_dir: str, utility_floor: float | None) -> Candidates:
    """The tuning front's points nearest the total (a split or public tuning)."""
    if set(tuning_problem.names) != set(problem.names):
        raise UserError(f"The tuning problem {tuning_problem.name} has parameters {tuning_problem.names}, but "
                        f"{problem.name} has {problem.names}; tune on a problem with the same parameters.")
    tuning_data = load_data(tuning_problem, data_dir)
    floor = tuning_problem.error_floor(tuning_data, utility_floor)
    front, beat_trivial = candidate_points.front_points(tuning_evaluations, tuning_problem, floor)
    if not beat_trivial:
        log.warning("%s: no front point beats the trivial predictor (error %.4g); the candidates are the whole front: "
                    "run a longer tuning study for better ones", tuning_problem.name, floor)
    points, values, origins = candidate_points.choose(front, problem, settings.epsilon, settings.candidates,
                                                      derived_rng(settings.seed, "release-candidates", problem.name))
    return Candidates(points, values, origins, front, beat_trivial,
                      {"problem": tuning_problem.name, "how": settings.tuning.describe(),
                       "rows": tuning_data.source_label if tuning_data else None})


def prior_candidates(problem: Problem, settings: ReleaseSettings) -> Candidates:
    """Settings drawn from the domain's prior by the config's seed (a private tuning: no front)."""
    count = settings.tuning.candidates
    points = candidate_points.prior_points(problem, count, derived_rng(settings.seed, "release-prior", problem.name))
    return Candidates(points, [(math.nan, math.nan)] * count, ["prior"] * count, None, True,
                      {"problem": None, "how": settings.tuning.describe(), "rows": "none"})


@dataclass
class Search:
    """The rows the trials train and score on, the plan's extra accounting for a subsampled search, and
    the rows the chosen setting is trained on again (None: the best trial's model is released)."""
    training: Data
    validation: Data
    subsampled: accounting.Subsampled | None = None
    final: Data | None = None


def search_rows(problem: Problem, private: PrivateData, settings: ReleaseSettings, accountant: Accountant,
                rng: np.random.Generator) -> Search:
    """The trials' rows: the private training and validation rows; under a subsampled tuning, a secret
    subsample of every private row drawn by `rng` (the selection's generator), split as the private rows are."""
    if not isinstance(settings.tuning, SubsampledTuning):
        return Search(private.training, private.validation)
    rows = private.rows
    n = rows.n_train
    m = int(round(settings.tuning.subsample * n))
    m_val = int(round(settings.validation * m))
    if not (2 <= m_val <= m - 1 and m < n):
        raise UserError(f"release.tuning.subsample = {settings.tuning.subsample:g} of {n} private rows leaves no "
                        f"training or no validation row for the search, or no subsampling; choose a share between "
                        f"{3 / (settings.validation * n):.3g} and {1 - 1 / n:.3g}.")
    chosen = np.sort(rng.choice(n, m, replace=False))   # secret: the amplification needs it
    order = derived_rng(settings.seed, "release-subsample-validation", settings.problem).permutation(m)
    val, train = chosen[np.sort(order[:m_val])], chosen[np.sort(order[m_val:])]
    labels = rows.y_train is not None
    training = replace(rows, x_train=rows.x_train[train], y_train=rows.y_train[train] if labels else None)
    validation = replace(rows, x_test=rows.x_train[val], y_test=rows.y_train[val] if labels else None)

    def carry(point: dict, eps0: float):
        # the setting as found (epochs, lot, learning rate, clip), its noise recalibrated for every private row: a
        # lot grown with the rows (the same steps an epoch) left most of Adult's settings at the trivial predictor
        return calibrated(problem, accountant, point, n=n, epsilon=eps0, delta=settings.delta)

    return Search(training, validation, accounting.Subsampled(m, n, carry, lambda p: training_event(problem, p, n)),
                  rows)


def release(problem: Problem, tuning_problem: Problem | None, tuning_evaluations: pd.DataFrame | None,
            settings: ReleaseSettings, accountant: Accountant, data_dir: str = paths.DATA_DIR,
            utility_floor: float | None = None) -> dict:
    """Run the release; returns its record (what `write` saves), with the model under `model`. Under a
    private tuning (`tuning_problem` None) the candidates come from the domain's prior."""
    check_releasable(problem)
    start = time.perf_counter()   # recorded only in an experiment's diagnostics (K shows in it)
    oracle = oracle_target(problem)
    private = private_data(problem, settings, data_dir)
    source = (prior_candidates(problem, settings) if tuning_problem is None else
              front_candidates(problem, tuning_problem, tuning_evaluations, settings, data_dir, utility_floor))
    selection_rng = _selection_rng(settings, "release-selection", problem.name)
    search = search_rows(problem, private, settings, accountant, selection_rng)
    n_train, n_val = search.training.n_train, len(search.validation.x_test)
    plan = accounting.plan(source.points, lambda p: training_event(problem, p, n_train), total=settings.epsilon,
                           delta=settings.delta, eta=settings.selection.eta, mean_trials=settings.selection.mean_trials,
                           score_noise=settings.score_noise, validation_rows=n_val, accountant=accountant,
                           front_values=source.values, origins=source.origins,
                           calibrate=lambda p, eps0: calibrated(problem, accountant, p, n=n_train, epsilon=eps0,
                                                                delta=settings.delta),
                           subsampled=search.subsampled)
    log.info("%s: eps0 = %.4g for %d candidates; total epsilon %.4g at delta %g", problem.name, plan.eps0,
             len(plan.candidates), plan.total_epsilon, settings.delta)
    if plan.total_epsilon > settings.epsilon:   # the plan's own check, once more where it matters
        raise AssertionError(f"the release's total epsilon {plan.total_epsilon} exceeds {settings.epsilon}")

    score_grid = exact_noise.gaussian(settings.score_noise, 1 / (n_val - 1), 1, 1.0)   # scores are in [0, 1]

    def trial(rng):
        chosen = plan.candidates[int(rng.integers(len(plan.candidates)))]
        model = oracle.train(chosen.point, search.training, rng)
        score = float(oracle.score(model, search.validation))
        if not 0 <= score <= 1:
            raise UserError(f"The score() of {problem.name}'s oracle returned {score}; it must be its utility "
                            f"({problem.utility}) in [0, 1], a mean over the validation rows (its sensitivity, "
                            f"1/validation rows, is what the score's noise is calibrated to).")
        return float(score_grid.release(np.array([score]), rng)[0]), (chosen, model)

    with _quiet_trials(settings):
        selected = random_stopping(trial, settings.selection.eta, settings.selection.mean_trials, selection_rng)
        chosen, model = selected.output
        hyperparameters, training_epsilon = chosen.point, chosen.training_epsilon
        if search.final is not None:   # the chosen setting, trained once more on every private row
            hyperparameters, training_epsilon = chosen.final, chosen.final_epsilon
            model = oracle.train(hyperparameters, search.final, selection_rng)
    test_utility = float(oracle.score(model, private.test))
    record = {
        "problem": problem.name,
        "tuning": source.tuning,
        "private_rows": private.description,
        "rows_protected": 1.0 if settings.tuning.protects_every_row else 1 - settings.tuning.fraction,
        "guarantee": {"epsilon": plan.total_epsilon, "delta": settings.delta, "target_epsilon": settings.epsilon,
                      "covers": COVERS[search.final is not None],
                      "neighbouring": f"{oracle_neighbouring(problem)}, " + NEIGHBOURS[search.final is not None],
                      "randomness": RANDOMNESS[settings.randomness] + (
                          "" if seedable(problem) else "; the oracle's training noise excepted: it comes from the "
                          "oracle's own generator (seedable = False), which no seed here reaches"),
                      "accounting": ACCOUNTING[search.final is not None] + (
                          f"converted by {accountant.conversion.name}; each training's steps by {accountant.description}"),
                      "not_covered": NOT_COVERED[settings.tuning.protects_every_row].format(
                          where=KEEPING_K[settings.randomness])},
        "selection": {"method": "random-stopping", "eta": settings.selection.eta,
                      "mean_trials": settings.selection.mean_trials, "describe": settings.selection.describe()},
        "eps0": plan.eps0,
        "trial_epsilon": plan.trial_epsilon,
        "search": {"training_rows": n_train, "validation_rows": n_val,
                   "subsample_rows": search.subsampled.rows if search.subsampled else None,
                   "private_rows": private.rows.n_train},
        "score": {"noise_sd": settings.score_noise, "validation_rows": n_val,
                  "noise_multiplier": plan.score_noise_multiplier, "sensitivity": 1 / (n_val - 1)},
        "released": {"hyperparameters": hyperparameters, "training_epsilon": training_epsilon,
                     "origin": chosen.origin, "front_epsilon": chosen.front_epsilon,
                     "front_utility": chosen.front_utility, "noisy_validation_score": selected.score},
        "utility": problem.utility,
        "test_utility": test_utility,
        "test_rows": len(private.test.x_test),
        "front": _front_record(source.front, plan),
        "candidates": [asdict(c) for c in plan.candidates],
        "candidates_beat_trivial_predictor": source.beat_trivial,
        "package_version": __version__,
        "model": model,
        "diagnostics": None,
    }
    if settings.keeps_diagnostics:
        seconds = time.perf_counter() - start
        reference = reference_without_private_tuning(source.points, problem, private, settings, accountant,
                                                     _selection_rng(settings, "release-reference", problem.name))
        record["diagnostics"] = {
            "keep_private": "NOT covered by the release's guarantee: publishing any of these is not covered (K, and "
                            "the run time that reveals it, must stay hidden); an experiment's (seeded randomness), "
                            "never written under release.randomness: os",
            "trials_run": selected.trials, "seconds": seconds,
            "reference_without_private_tuning": reference}
    log.info("%s: released %s; test %s %.4f", problem.name, hyperparameters, problem.utility, test_utility)
    return record


def _front_record(front: pd.DataFrame | None, plan: accounting.Plan) -> dict | None:
    if front is None:
        return None
    eps, utility = front["epsilon"].to_numpy(), front["utility"].to_numpy()
    return {"epsilon": eps.tolist(), "utility": utility.tolist(),
            "best_utility_at_total": _best_at(eps, utility, plan.total_epsilon),
            "best_utility_at_eps0": _best_at(eps, utility, plan.eps0)}


def reference_without_private_tuning(points, problem: Problem, private: PrivateData, settings: ReleaseSettings,
                                     accountant: Accountant, rng) -> dict:
    """What tuning without accounting for it gives on the same rows: every candidate trained once with
    its noise calibrated to the *total* epsilon, the best by exact validation score, tested once.
    NOT private (the selection reads the validation rows without noise and its epsilon leaves the
    tuning out): a diagnostic for the price of private tuning, never released."""
    n_train = private.training.n_train
    oracle = oracle_target(problem)
    best = None
    for point in points:
        found = calibrated(problem, accountant, point, n=n_train, epsilon=settings.epsilon, delta=settings.delta)
        if found is None:
            continue
        model = oracle.train(found[0], private.training, rng)
        accuracy = float(oracle.score(model, private.validation))
        if best is None or accuracy > best[0]:
            best = (accuracy, found[0], model)
    if best is None:
        return {"test_utility": math.nan, "hyperparameters": None, "validation_utility": math.nan}
    return {"test_utility": float(oracle.score(best[2], private.test)), "hyperparameters": best[1],
            "validation_utility": best[0], "trainings": len(points),
            "what": "NOT private: each candidate trained once at the total epsilon, the best by exact validation "
                    "score; its epsilon leaves the tuning out. A diagnostic, never released"}


@contextlib.contextmanager
def _quiet_trials(settings: ReleaseSettings):
    """Under `os`, the trials' Python warnings are silenced: whether one was shown would hint at how
    many trials ran (what an oracle prints itself, or a worker process, is the oracle's own)."""
    with warnings.catch_warnings():
        if not settings.keeps_diagnostics:
            warnings.simplefilter("ignore")
        yield


def _selection_rng(settings: ReleaseSettings, *names) -> np.random.Generator:
    if settings.randomness == "os":
        return secure_random.generator()
    return derived_rng(settings.seed, *names)


def oracle_neighbouring(problem: Problem) -> str:
    return str(problem.oracle.neighbouring)


def _best_at(eps: np.ndarray, utility: np.ndarray, level: float) -> float:
    """The front's best utility at epsilon <= level (NaN where no front point is that private)."""
    within = utility[eps <= level]
    return float(within.max()) if len(within) else math.nan


def write(record: dict, problem: Problem, folder_files: dict, provenance: dict) -> None:
    """The release's files: `model` (.npz of named arrays), `candidates` (Parquet), `diagnostics` (JSON,
    kept private: K, the run time, the non-private reference; an experiment's only: a release under
    `randomness: os` has none, and one left at that path by an earlier experiment is removed), `record`
    (JSON, last). Nothing in them dates the run: no timestamp, no duration."""
    with atomic_path(folder_files["model"]) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **weights(problem, record["model"]))   # its members carry zipfile's fixed 1980 date
    frame = pd.DataFrame([{**c["point"], "training_epsilon": c["training_epsilon"], "front_epsilon": c["front_epsilon"],
                           "front_utility": c["front_utility"], "origin": c["origin"]} for c in record["candidates"]])
    write_frame(frame, folder_files["candidates"], {**provenance, "eps0": record["eps0"]})
    if record["diagnostics"] is not None:
        with atomic_path(folder_files["diagnostics"]) as tmp:
            tmp.write_text(json.dumps(record["diagnostics"], indent=2, default=_json_default) + "\n")
    elif folder_files.get("diagnostics"):
        Path(folder_files["diagnostics"]).unlink(missing_ok=True)
    saved = {k: v for k, v in record.items() if k not in ("model", "diagnostics")}
    with atomic_path(folder_files["record"]) as tmp:
        tmp.write_text(json.dumps({**saved, "provenance": provenance}, indent=2, default=_json_default) + "\n")


def _json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")
