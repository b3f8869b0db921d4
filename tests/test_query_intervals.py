"""A front query's predictive interval for ONE new training (bo.query.FrontQuery.interval): on a synthetic
chain whose single-training spread is known, it is wider than the GP's latent-only interval and than the
interval answers carried before (+- z x predicted_sd: an R-replication mean's), covers fresh single
trainings at about its nominal level, and its replication term recovers the known spread."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dptradeoff.bo import exact_privacy

from dptradeoff.bo.propose import Settings
from dptradeoff.bo.query import INTERVAL_LABEL, INTERVAL_LEVEL, FrontQuery, logit_interval, query_rng
from dptradeoff.bo.transforms import error_from_gp
from dptradeoff.plots.front import _predicted_bar
from dptradeoff.problems import Oracle, Param, Problem

R = 3
Z = stats.norm.ppf(0.5 + INTERVAL_LEVEL / 2)


class Exact(Oracle):
    """epsilon = 10^(2a - 1), exactly and vectorised: epsilon <= 1 is a <= 0.5."""
    def epsilon(self, point, *, n, delta):
        return 10 ** (2 * point["a"] - 1)

    def epsilons(self, points, *, n, delta):
        return 10 ** (2 * np.asarray(points)[:, 0] - 1)


NOISY = Problem("noisy-known", None, Exact(), domain=(Param("a", 0.0, 1.0), Param("b", 0.0, 1.0)), delta=0.0)


def mean_logit(a, b):
    """The mean of a training's logit(error): better with more epsilon (a), best at b = 0.3."""
    return np.log(0.3 / 0.7) - 1.2 * np.asarray(a) + 1.5 * (np.asarray(b) - 0.3) ** 2


def spread(a, b, sd):
    """One training's sd in logit(error): `sd`, or a function of the point."""
    return sd(a, b) if callable(sd) else np.full(np.shape(a), float(sd))


def chain(sd, seed: int = 0) -> pd.DataFrame:
    """24 random trainings, then 24 the 'acquisition' chose near the front (a in [0.3, 0.7]), each R
    single trainings logit(error) ~ N(mean_logit, sd^2), the row their mean as the pipeline writes it."""
    rng = np.random.default_rng(seed)
    points = np.vstack([rng.random((24, 2)), np.column_stack([rng.uniform(0.3, 0.7, 24), rng.uniform(0.05, 0.55, 24)])])
    rows = []
    for index, (a, b) in enumerate(points):
        runs = 1.0 - error_from_gp(mean_logit(a, b) + spread(a, b, sd) * rng.standard_normal(R))
        rows.append({"a": a, "b": b, "epsilon": 10 ** (2 * a - 1), "utility": runs.mean(), "error": 1 - runs.mean(),
                     "utility_min": runs.min(), "utility_max": runs.max(), "utility_runs": list(runs), "repeats": R,
                     "index": index, "method": "random" if index < 24 else "dpareto"})
    return pd.DataFrame(rows)


def ask(evals: pd.DataFrame, target: float = 1.0):
    query = FrontQuery(NOISY, evals, None, Settings(candidates=1000, gp_restarts=2), query_rng(1, NOISY.name, "eps", target, 0))
    return query, query.for_epsilon(target)


def fresh(point: dict, sd, n: int = 4000) -> np.ndarray:
    """n new single trainings' utilities at `point`."""
    a, b = point["a"], point["b"]
    noise = np.random.default_rng(99).standard_normal(n)
    return 1.0 - error_from_gp(mean_logit(a, b) + float(spread(a, b, sd)) * noise)


def inside(values: np.ndarray, low: float, high: float) -> float:
    return float(np.mean((values >= low) & (values <= high)))


def test_the_interval_for_one_training_is_wider_than_the_gps_and_covers_a_known_spread():
    sd = 0.15
    query, answer = ask(chain(sd))
    assert answer.epsilon <= 1.0 and answer.point["a"] == pytest.approx(0.5, abs=0.05)
    point = np.array([[answer.point["a"], answer.point["b"]]])
    latent_low, latent_high = logit_interval(*query.surrogates.utility.predict(query.scaler.to_unit(point)), INTERVAL_LEVEL)
    old_low, old_high = answer.predicted_utility - Z * answer.predicted_sd, answer.predicted_utility + Z * answer.predicted_sd
    new = answer.interval_high - answer.interval_low
    assert answer.interval_low < answer.predicted_utility < answer.interval_high
    assert new > 1.5 * (latent_high[0] - latent_low[0])     # replication noise included
    assert new > 1.3 * (old_high - old_low)                  # one training's, not an R-replication mean's
    singles = fresh(answer.point, sd)
    covered, covered_old = inside(singles, answer.interval_low, answer.interval_high), inside(singles, old_low, old_high)
    assert 0.85 <= covered <= 0.99, (covered, covered_old)   # about the nominal 90 %, not a wall
    assert covered_old < covered - 0.1, (covered, covered_old)
    assert answer.single_sd == pytest.approx(np.std(singles), rel=0.35)


def test_the_replication_term_recovers_the_single_training_spread_and_follows_it():
    """Homoscedastic: s^2(x) is the known variance; heteroscedastic (noisier where the error is high):
    it follows the spread of the trainings near x, not one pooled value."""
    query, answer = ask(chain(0.15))
    unit = query.scaler.to_unit(np.array([[answer.point["a"], answer.point["b"]]]))
    mean, _ = query.surrogates.utility.predict(unit)
    assert query.replication.at(unit, mean)[0] == pytest.approx(0.15**2, rel=0.35)
    _, var = query.single_training(np.array([[answer.point["a"], answer.point["b"]]]))
    assert var[0] >= 0.15**2 * 0.65                          # the interval's variance holds one training's

    def uneven(a, b):
        return np.where(np.asarray(a) < 0.5, 0.3, 0.05)      # noisy at small epsilon, stable at large
    query, _ = ask(chain(uneven, seed=1))
    points = np.array([[0.15, 0.3], [0.85, 0.3]])
    unit = query.scaler.to_unit(points)
    s2 = query.replication.at(unit, query.surrogates.utility.predict(unit)[0])
    assert s2[0] > 10 * s2[1]
    assert s2[0] == pytest.approx(0.3**2, rel=0.6) and s2[1] == pytest.approx(0.05**2, rel=0.6)


def test_an_answer_row_and_the_front_figure_carry_the_interval():
    query, answer = ask(chain(0.15))
    row = answer.row()
    assert {"interval_low", "interval_high", "interval_level", "single_sd", "predicted_sd"} <= set(row)
    assert row["interval_level"] == INTERVAL_LEVEL == 0.9
    assert INTERVAL_LABEL == "predictive interval for one training (GP, not a guarantee)"
    assert INTERVAL_LABEL in answer.interval_text() and "90%" in answer.interval_text()
    below, above, what = _predicted_bar(pd.Series({**row, "target": 1.0}))
    assert below == pytest.approx(row["interval_high"] - row["predicted_utility"])
    assert above == pytest.approx(row["predicted_utility"] - row["interval_low"])
    assert INTERVAL_LABEL in what
    old = pd.Series({"predicted_utility": 0.8, "predicted_sd": 0.01})     # a row written before the interval
    assert _predicted_bar(old)[:2] == (0.01, 0.01)
    none = FrontQuery(NOISY, chain(0.15), None, Settings(candidates=200, gp_restarts=1), query_rng(1, NOISY.name, "eps", 0.01, 0))
    unanswered = none.for_epsilon(1e-9)                      # no point has epsilon <= 1e-9
    assert unanswered.point is None and np.isnan(unanswered.row()["interval_low"])


def test_the_front_figure_draws_the_interval_for_one_training(monkeypatch):
    from dptradeoff.plots import front

    monkeypatch.setattr(front, "save", lambda *args: None)
    evals = chain(0.15).assign(source_label="synthetic")
    _, answer = ask(evals)
    runs = fresh(answer.point, 0.15, R)
    realised = {"utility": runs.mean(), "error": 1 - runs.mean(), "utility_min": runs.min(), "utility_max": runs.max(),
                "repeats": R, "target": 1.0}
    fig = front.front_figure(NOISY.name, "accuracy", {"dpareto": evals}, [pd.DataFrame([{**answer.row(), **realised}])],
                             "unused.pdf", "test config")
    ax = fig.axes[0]
    labels = [" ".join(label.split()) for label in ax.get_legend_handles_labels()[1]]   # wrapped to the legend's width
    assert any(INTERVAL_LABEL in label and "90%" in label and "GP prediction" in label for label in labels)
    bars = [c for c in ax.collections if c.__class__.__name__ == "LineCollection"]
    spans = [np.sort(np.asarray(seg)[:, 1]) for c in bars for seg in c.get_segments()]
    expected = np.sort([1 - answer.interval_high, 1 - answer.interval_low])
    assert any(np.allclose(span, expected) for span in spans)


class Slow(Oracle):
    """The same epsilon, per point only and too slow for the acquisition's candidates: privacy is then
    screened by the privacy GP's prediction and checked by the oracle (as for an oracle in its own environment, one
    worker call each)."""
    def epsilon(self, point, *, n, delta):
        import time

        time.sleep(0.002)
        return 10 ** (2 * point["a"] - 1)


def test_an_epsilon_question_is_answered_where_only_the_privacy_gp_ranks_the_candidates():
    problem = Problem("slow-known", None, Slow(), domain=NOISY.domain, delta=0.0)
    query = FrontQuery(problem, chain(0.15), None, Settings(candidates=1000, gp_restarts=2),
                       query_rng(1, problem.name, "eps", 1.0, 0))
    assert isinstance(query.ranking, exact_privacy.ScreenedOracle)   # the GP's mean screens, the oracle checks
    answer = query.for_epsilon(1.0)
    assert answer.point is not None and answer.epsilon <= 1.0 and answer.point["a"] == pytest.approx(0.5, abs=0.05)
