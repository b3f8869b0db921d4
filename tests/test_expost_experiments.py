"""Paper 004's experiments: Fig. 1's curves, the Table 3 tasks, building blocks and table (Tables 1-2:
test_expost_threads.py)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dptradeoff.expost import baselines, experiments, ml, ml_experiments, ml_tasks
from dptradeoff.expost.settings import DPSGDGrid
from dptradeoff.privacy import dpsgd


def test_invocation_curves_span_the_figure():
    curves = experiments.invocation_curves(0.1, 0.01, 120.0, points=20)
    for method, g in curves.groupby("method"):
        assert g["mean"].max() <= 121 and g["mean"].max() >= 100
        assert np.all(np.diff(g.sort_values("mean")["std"].to_numpy()) > 0)


def test_candidates_record_the_epsilon_at_their_noise():
    """Each Table 3 candidate carries its run's epsilon at the calibrated noise (<= its grid epsilon)."""
    grid = DPSGDGrid(eps=(0.2, 0.5), learning_rate=(0.1,), epochs=(5,), batch_size=(256,), clip=(1.0,))
    cands = ml.candidates(grid, 857, 1e-6)
    assert [c.eps for c in cands] == [0.2, 0.5]
    for c in cands:
        assert c.eps_achieved == dpsgd.epsilon(857, 256, 5, c.noise, 1e-6) and 0.98 * c.eps <= c.eps_achieved <= c.eps


def test_brownian_times_hit_the_requested_epsilons():
    grid = np.arange(1, 11) / 10
    times, (a, b) = ml.brownian_times(grid, 1e-6)
    assert math.exp(-2 * a * b) == pytest.approx(1e-6)
    np.testing.assert_allclose(baselines.brownian_epsilon(times, a, b), grid)
    assert np.all(np.diff(times) > 0) and times[0] > 0


def test_above_threshold_stops_at_a_clear_crossing():
    rng = np.random.default_rng(0)
    values = np.array([0.1, 0.2, 0.9, 0.95])
    stops = [ml.above_threshold_stop(values, 0.5, 1e-4, 1.0, rng) for _ in range(50)]
    assert stops == [2] * 50
    assert ml.above_threshold_stop(np.array([0.1, 0.2]), 0.5, 1e-4, 1.0, rng) is None


def test_ml_table_counts_trials_that_stopped():
    frame = pd.DataFrame({"method": ["alg3"] * 3, "trial": [0, 1, 2], "epsilon": [0.3, 0.5, math.inf],
                          "met": [True, True, False], "runs": [3, 4, 50], "spent": [0.3, 0.5, 1.3]})
    row = ml_experiments.ml_table({"gisette": frame}).iloc[0]
    assert row["alg3_epsilon"] == pytest.approx(0.4) and row["alg3_stopped"] == "2/3" and row["alg3_met"] == "2/3"
    # the trial that never released a model spent its budget too
    assert row["alg3_epsilon_spent_all_trials"] == pytest.approx(0.7)
    assert row["paper_alg3_epsilon"] == 0.23


def test_alg3_trial_charges_thm13_costs_of_what_it_selected():
    """Table 3's Alg. 3: spent = (bottom attempts) x bottom cost + the selected candidate's Thm 13 cost,
    converted by Lemma 7 (a bar every model meets stops at the first non-bottom attempt)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4))
    y = (x[:, 0] > 0).astype(float)
    task = ml_tasks.prepare("gisette", x[:200], y[:200], x[200:], y[200:], threshold=0.0, target_bound=1.0)
    grid = DPSGDGrid(eps=(0.5, 1.0), learning_rate=(0.5,), epochs=(1,), batch_size=(50,), clip=(1.0,))
    cands = ml.candidates(grid, 200, 1e-6)
    alpha, eps_prime, delta = 16.0, 0.1, 1e-6
    eps_rdp = np.array([ml.rdp_curve(c, 200, (alpha,))[0] for c in cands])
    from dptradeoff.expost.tuning import rdp_cost
    costs, bottom = rdp_cost(eps_rdp, eps_prime, alpha)
    for seed in range(5):
        result = ml.alg3_trial(task, cands, eps_rdp, costs, bottom, eps_prime, alpha, delta, 50, np.random.default_rng(seed))
        assert result.met and result.spent == result.epsilon
        rdp_spent = result.epsilon - math.log(1 / delta) / (alpha - 1)
        bottoms = (rdp_spent - costs) / bottom
        assert np.any(np.isclose(bottoms, np.round(bottoms), atol=1e-6) & (np.round(bottoms) >= 0)), (rdp_spent, costs, bottom)


def test_brownian_trial_that_never_stops_spends_its_whole_path():
    """A bar no model can meet: AboveThreshold never stops, every release was made, and the trial spent
    the last release's epsilon plus AboveThreshold's."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4))
    y = (x[:, 0] > 0).astype(float)
    task = ml_tasks.prepare("gisette", x[:200], y[:200], x[200:], y[200:], threshold=1.01, target_bound=1.0)
    grid = np.array([0.1, 0.2, 0.4])
    result = ml.brownian_trial(task, grid, 0.01, 1e-6, 1e-3, 1e-3, rng, {})
    assert not result.met and result.epsilon == math.inf and result.spent == pytest.approx(0.41)


def test_alg3_trial_charges_a_scripted_sequence_exactly(monkeypatch):
    """Scripted Alg. 3 outcomes - bottom, a model below the bar, bottom, a model meeting it - are charged
    bottom + cost[0] + bottom + cost[1] in ex-post RDP, then converted by Lemma 7 once."""
    script = iter([(None, None, 0), (0, 0.2, 1), (None, None, 0), (1, 0.9, 2)])
    monkeypatch.setattr(ml, "random_dropping_tuning", lambda *args, **kwargs: next(script))
    task = ml_tasks.TaskData(ml_tasks.TASKS["gisette"], np.zeros((2, 1)), np.zeros(2), np.zeros((2, 1)), np.zeros(2),
                             threshold=0.5)
    cands = [ml.Candidate(0.5, 0.1, 1, 1, 1.0, 1.0, 0.5), ml.Candidate(1.0, 0.1, 1, 1, 1.0, 0.5, 1.0)]
    costs, bottom, alpha, delta = np.array([0.3, 0.7]), 0.05, 16.0, 1e-6
    result = ml.alg3_trial(task, cands, np.array([0.1, 0.2]), costs, bottom, 0.01, alpha, delta, 10,
                           np.random.default_rng(0))
    assert result.met and result.runs == 3
    assert result.epsilon == pytest.approx(2 * bottom + 0.3 + 0.7 + math.log(1 / delta) / (alpha - 1))


def test_table3_candidates_calibrate_by_the_configured_conversion():
    """privacy.conversion reaches Table 3's calibration: classic needs more noise for the same target."""
    grid = DPSGDGrid(eps=(0.5,), learning_rate=(0.1,), epochs=(2,), batch_size=(64,), clip=(1.0,))
    (improved,), (classic,) = ml.candidates(grid, 2000, 1e-6), ml.candidates(grid, 2000, 1e-6, "classic")
    assert classic.noise > improved.noise
    assert classic.eps_achieved == dpsgd.epsilon(2000, 64, 2, classic.noise, 1e-6, "classic") <= 0.5
    assert improved.eps_achieved == dpsgd.epsilon(2000, 64, 2, improved.noise, 1e-6) <= 0.5
