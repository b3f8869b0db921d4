"""Front-quality metrics: against moocore, against a literal re-implementation of DPareto's pf_utils, by hand."""
from __future__ import annotations

import math

import moocore
import numpy as np
import pytest

from dptradeoff import UserError
from dptradeoff.stats.front_metrics import (
    ANTI_IDEAL,
    METRIC_NAMES,
    BestErrorAt,
    LogEpsilonHypervolume,
    RawHypervolume,
    Region,
    RegionHypervolume,
    best_error_at,
    gap_to_reference,
    log_epsilon_hypervolume,
    metrics,
    raw_hypervolume,
    region_hypervolume,
)

LN10 = math.log(10.0)


def random_points(seed: int, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """epsilon log-uniform in [1e-3, 30], error uniform in [0, 1.2]."""
    rng = np.random.default_rng(seed)
    return np.exp(rng.uniform(np.log(1e-3), np.log(30.0), n)), rng.uniform(0.0, 1.2, n)


def moocore_area(x: np.ndarray, y: np.ndarray, ref: tuple[float, float]) -> float:
    inside = (x < ref[0]) & (y < ref[1])
    if not inside.any():
        return 0.0
    return float(moocore.hypervolume(np.column_stack([x[inside], y[inside]]), ref=ref))


# --- 1. against moocore on transformed coordinates -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_against_moocore(seed):
    eps, err = random_points(seed)
    assert raw_hypervolume(eps, err) == pytest.approx(moocore_area(eps, err, ANTI_IDEAL), rel=1e-12, abs=1e-12)
    assert log_epsilon_hypervolume(eps, err) == pytest.approx(
        moocore_area(np.log(eps), err, (LN10, 1.0)), rel=1e-12, abs=1e-12
    )
    region = Region(0.01, 10.0, 0.76)
    lo, hi = math.log(region.epsilon_low), math.log(region.epsilon_high)
    expected = moocore_area(np.maximum(np.log(eps), lo), err, (hi, region.error_floor)) / ((hi - lo) * 0.76)
    assert region_hypervolume(eps, err, region) == pytest.approx(expected, rel=1e-12, abs=1e-12)


# --- 2. against a literal re-implementation of pf_utils.compute_pf_points / compute_pf_volume ------------------------


def pf_utils_points(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted by epsilon (stable); a point stays unless some point before it has strictly smaller error."""
    ordered = sorted(points, key=lambda p: p[0])
    kept = []
    for i, (_, err) in enumerate(ordered):
        if not any(ordered[j][1] < err for j in range(i)):
            kept.append(ordered[i])
    return kept


def pf_utils_log_volume(front: list[tuple[float, float]], anti_ideal: tuple[float, float]) -> float:
    """compute_pf_volume with log_transform_x=True; like the original, an empty front raises IndexError."""
    front = [p for p in front if p[0] < anti_ideal[0]]
    front = [p for p in front if p[1] < anti_ideal[1]]
    total = 0.0
    for i in range(len(front) - 1):
        total += (math.log(front[i + 1][0]) - math.log(front[i][0])) * (anti_ideal[1] - front[i][1])
    total += (math.log(anti_ideal[0]) - math.log(front[-1][0])) * (anti_ideal[1] - front[-1][1])
    return total


@pytest.mark.parametrize("seed", range(20))
def test_log_epsilon_matches_pf_utils_with_ties(seed):
    rng = np.random.default_rng(100 + seed)
    n = 30
    eps = rng.choice([0.005, 0.02, 0.1, 0.1, 0.5, 1.0, 2.0, 10.0, 15.0], n)  # ties, and points at/after 10
    err = rng.choice([0.05, 0.2, 0.2, 0.4, 0.6, 0.9, 1.0, 1.1], n)  # equal errors, and errors at/above 1
    front = pf_utils_points(list(zip(eps.tolist(), err.tolist())))
    assert log_epsilon_hypervolume(eps, err) == pytest.approx(pf_utils_log_volume(front, ANTI_IDEAL), rel=1e-12)


def test_log_epsilon_empty_front_is_zero_where_pf_utils_raised():
    eps, err = np.array([0.5, 20.0]), np.array([1.0, 0.1])  # nothing inside the (10, 1) box
    with pytest.raises(IndexError):
        pf_utils_log_volume(pf_utils_points(list(zip(eps, err))), ANTI_IDEAL)
    assert log_epsilon_hypervolume(eps, err) == 0.0
    assert log_epsilon_hypervolume(np.array([]), np.array([])) == 0.0


# --- 3. staircases by hand -------------------------------------------------------------------------------------------

HAND_EPS = np.array([0.1, 1.0, 20.0, 0.5])
HAND_ERR = np.array([0.5, 0.3, 0.1, 1.0])  # (20, 0.1) is right of epsilon 10, (0.5, 1.0) is at error 1: both dropped


def test_raw_by_hand():
    # (1 - 0.1) * (1 - 0.5) + (10 - 1) * (1 - 0.3) = 0.45 + 6.3 = 6.75
    assert raw_hypervolume(HAND_EPS, HAND_ERR) == pytest.approx(6.75, rel=1e-14)
    assert raw_hypervolume(HAND_EPS, HAND_ERR, reference=(2.0, 0.6)) == pytest.approx(0.9 * 0.1 + 1.0 * 0.3)


def test_log_epsilon_by_hand():
    # (ln 1 - ln 0.1) * (1 - 0.5) + (ln 10 - ln 1) * (1 - 0.3) = ln10 * 0.5 + ln10 * 0.7 = 1.2 ln10 = 2.763102...
    assert log_epsilon_hypervolume(HAND_EPS, HAND_ERR) == pytest.approx(1.2 * LN10, rel=1e-14)


def test_region_by_hand():
    region = Region(0.01, 10.0, 0.76)
    eps = np.append(HAND_EPS, 0.001)  # below epsilon_low: counts at 0.01
    err = np.append(HAND_ERR, 0.7)
    # x clamped to ln 0.01; heights 0.76 - error: (0.01..0.1) 0.06, (0.1..1) 0.26, (1..10) 0.46, each ln10 wide
    # area = ln10 * (0.06 + 0.26 + 0.46) = 0.78 ln10; region = ln(10 / 0.01) * 0.76 = 2.28 ln10; share = 0.78/2.28
    assert region_hypervolume(eps, err, region) == pytest.approx(0.78 / 2.28, rel=1e-14)
    assert region_hypervolume(np.array([0.01]), np.array([0.0]), region) == pytest.approx(1.0)  # perfect front
    assert region_hypervolume(np.array([0.01, 10.0]), np.array([0.76, 0.0]), region) == 0.0  # floor / right edge


def test_best_error_at_by_hand():
    eps = np.append(HAND_EPS, 0.001)
    err = np.append(HAND_ERR, 0.7)
    assert best_error_at(eps, err, 0.5, 0.76) == 0.5  # (0.1, 0.5) beats (0.001, 0.7) and (0.5, 1.0)
    assert best_error_at(eps, err, 0.1, 0.76) == 0.5  # epsilon <= level includes the level
    assert best_error_at(eps, err, 0.05, 0.76) == 0.7  # only the point below the level
    assert best_error_at(HAND_EPS, HAND_ERR, 0.05, 0.76) == 0.76  # nothing at the level: the trivial predictor
    assert best_error_at(np.array([0.5]), np.array([1.0]), 0.6, 0.76) == 0.76  # nothing better than the floor
    assert best_error_at(eps, err, 100.0, 0.76) == 0.1


def test_gap_to_reference_by_hand():
    region = Region(0.01, 10.0, 0.76)
    assert gap_to_reference(HAND_EPS, HAND_ERR, HAND_EPS, HAND_ERR, region) == 0.0
    assert gap_to_reference(HAND_EPS, HAND_ERR, np.array([1.0]), np.array([0.3]), region) == 0.0  # worse reference
    # points (1, 0.3); reference (0.1, 0.5) adds the strip 0.1..1 (ln10 wide) at height 0.76 - 0.5 = 0.26,
    # over the region's ln(1000) * 0.76 = 2.28 ln10
    gap = gap_to_reference(np.array([1.0]), np.array([0.3]), np.array([0.1]), np.array([0.5]), region)
    assert gap == pytest.approx(0.26 / 2.28, rel=1e-14)


def test_nan_rows_are_ignored():
    eps = np.append(HAND_EPS, [np.nan, 0.01])
    err = np.append(HAND_ERR, [0.0, np.nan])
    region = Region(0.01, 10.0, 0.76)
    assert raw_hypervolume(eps, err) == raw_hypervolume(HAND_EPS, HAND_ERR)
    assert log_epsilon_hypervolume(eps, err) == log_epsilon_hypervolume(HAND_EPS, HAND_ERR)
    assert region_hypervolume(eps, err, region) == region_hypervolume(HAND_EPS, HAND_ERR, region)
    assert best_error_at(eps, err, 0.05, 0.76) == 0.76


def test_bad_region_is_a_user_error():
    with pytest.raises(UserError, match="epsilon_low < epsilon_high"):
        Region(1.0, 0.5, 1.0)
    with pytest.raises(UserError):
        Region(0.0, 10.0, 1.0)


# --- 4. the log metric's left edge -----------------------------------------------------------------------------------


def test_log_epsilon_left_edge_moves_region_does_not():
    """DPareto's log metric has no left bound: moving the leftmost point from 0.05 to 0.02 at error 0.24 adds
    ln(2.5) * 0.76; the region metric clamps both at epsilon_low = 0.1 and sees no difference."""
    rest_eps, rest_err = [0.5, 3.0], [0.1, 0.05]
    near = (np.array([0.05, *rest_eps]), np.array([0.24, *rest_err]))
    far = (np.array([0.02, *rest_eps]), np.array([0.24, *rest_err]))
    diff = log_epsilon_hypervolume(*far) - log_epsilon_hypervolume(*near)
    assert diff == pytest.approx(math.log(2.5) * 0.76, rel=1e-12)
    region = Region(0.1, 10.0, 0.76)
    assert region_hypervolume(*far, region) - region_hypervolume(*near, region) == 0.0


# --- 5. curve, split, metrics() --------------------------------------------------------------------------------------

REGION = Region(0.01, 10.0, 0.76)
ALL_METRICS = [
    RawHypervolume(),
    LogEpsilonHypervolume(),
    RegionHypervolume(REGION),
    BestErrorAt(0.1, 0.76),
    BestErrorAt(1.0, 0.76),
]


def curve_points(seed: int, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Random points with ties, exact duplicates and NaN rows."""
    eps, err = random_points(seed, n)
    eps[5:10] = eps[0]  # ties in epsilon
    err[10:15] = err[1]  # equal errors
    eps[15], err[15] = eps[2], err[2]  # an exact duplicate
    eps[20], err[21] = np.nan, np.nan  # failed evaluations
    return eps, err


@pytest.mark.parametrize("metric", ALL_METRICS, ids=lambda m: m.name)
@pytest.mark.parametrize("seed", range(3))
def test_curve_equals_value_on_every_prefix(metric, seed):
    eps, err = curve_points(seed)
    expected = [metric.value(eps[:n], err[:n]) for n in range(1, len(eps) + 1)]
    np.testing.assert_allclose(metric.curve(eps, err), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("metric", ALL_METRICS, ids=lambda m: m.name)
def test_split_parts_sum_to_value(metric):
    eps, err = curve_points(7)
    better, added = metric.split(eps, err, 0.76)
    assert better + added == pytest.approx(metric.value(eps, err), rel=1e-12, abs=1e-14)
    keep = err < 0.76
    assert better == metric.value(eps[keep], err[keep])


def test_split_by_hand():
    eps, err = np.append(HAND_EPS, 0.05), np.append(HAND_ERR, 0.9)  # (0.05, 0.9) is no better than floor 0.76
    # raw: (0.05, 0.9) adds the strip 0.05..0.1 at height 1 - 0.9: 0.05 * 0.1 = 0.005 on top of 6.75
    better, added = RawHypervolume().split(eps, err, 0.76)
    assert (better, added) == (pytest.approx(6.75), pytest.approx(0.005))
    assert RegionHypervolume(REGION).split(eps, err, 0.76)[1] == 0.0  # the region stops at the floor


def test_curve_is_fast():
    eps = np.geomspace(0.001, 9.0, 3000)  # every point joins the front: the worst case
    err = np.linspace(0.99, 0.0, 3000)
    values = RegionHypervolume(REGION).curve(eps, err)
    assert values[-1] == pytest.approx(region_hypervolume(eps, err, REGION))
    assert np.all(np.diff(values) >= 0)


def test_metrics_expands_best_error():
    built = metrics(METRIC_NAMES, REGION, levels=(0.1, 0.3, 1.0, 3.0))
    assert [m.name for m in built] == [
        "raw",
        "log-epsilon",
        "region",
        "best-error@0.1",
        "best-error@0.3",
        "best-error@1",
        "best-error@3",
    ]
    assert all(m.floor == 0.76 for m in built if isinstance(m, BestErrorAt))
    assert built[2].region == REGION
    assert all(m.label for m in built)


def test_metrics_unknown_name_is_a_user_error():
    with pytest.raises(UserError, match=r"'volume'.*raw, log-epsilon, region, best-error"):
        metrics(["raw", "volume"], REGION)
