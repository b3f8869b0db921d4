"""Paper 004 Tables 1-2 (the threads package): the accept test's sigma, what each method pays, the doubling
restart, Alg. 3's dropping (the default drops as Thm 11 requires, the as-published mode never does),
that no run overspends, the guarantee labels, and the table's shape."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dptradeoff import UserError
from dptradeoff.expost import baselines, experiments, threads, tuning
from dptradeoff.expost.settings import ExpostSettings
from tiny import TINY

CFG = {**TINY["expost"], "budget": 10.0, "delta": 1e-6, "grid": {"start": 0.001, "ratio": math.sqrt(2)},
       "thread_order": "given", "accept_sigma": "laplace_scale",
       "table1": {"eps_prime": 0.001, "expected_runs": 1.0},
       "table2": {"eps_prime": 0.01, "expected_runs": 0.3, "alpha": 32, "window": 2}}


def settings(**overrides) -> ExpostSettings:
    return ExpostSettings.from_config({**CFG, **overrides})


def setting(budget=10.0, accept_sigma="laplace_scale") -> threads.Setting:
    return settings(budget=budget, accept_sigma=accept_sigma).setting


def methods(table, cfg=CFG):
    return ExpostSettings.from_config(cfg).thread_table(table).methods()


def method(table, name, **overrides):
    cfg = {**CFG, table: {**CFG[table], **overrides}}
    return next(m for m in methods(table, cfg) if m.name == name)


def test_acceptance_check_is_the_papers():
    sigma = 2.0
    assert threads.accepted(21 * sigma, sigma)          # (22/20) = 1.1: on the boundary
    assert not threads.accepted(20 * sigma, sigma)      # 21/19 > 1.1
    assert not threads.accepted(0.5 * sigma, sigma)     # |y| < sigma


@pytest.mark.parametrize("accept_sigma, per_scale", [("laplace_scale", 1.0), ("standard_deviation", math.sqrt(2))])
def test_the_accept_test_sees_the_configured_sigma_and_the_noise_is_laplace_of_scale_one_over_eps(accept_sigma,
                                                                                                   per_scale):
    """`laplace_scale` (what reproduces the paper, whose text says standard deviation) uses sigma = b = 1/eps
    for Laplace noise; `standard_deviation` uses sqrt(2) b. Either way the noise itself is Laplace(1/eps):
    the check is post-processing."""
    s = setting(accept_sigma=accept_sigma)
    assert s.laplace_check == per_scale
    seen = []
    eps = 0.05
    rng = np.random.default_rng(0)
    for _ in range(20_000):
        baselines.doubling_laplace(500.0, np.array([eps]), 1.0, lambda y, sigma: seen.append((y, sigma)) and False,
                                   rng, s.laplace_check)
    y, sigma = np.array(seen).T
    assert np.all(sigma == per_scale / eps)
    assert stats.kstest((y - 500.0) * eps, stats.laplace().cdf).pvalue > 1e-3
    # the same check in noise reduction
    seen.clear()
    baselines.noise_reduction_laplace(500.0, np.array([0.01, 0.02]), lambda y, sigma: seen.append(sigma) and False,
                                      rng, s.laplace_check)
    assert seen == [per_scale / 0.01, per_scale / 0.02]


def test_unknown_accept_sigma_is_refused():
    with pytest.raises(UserError, match="accept_sigma"):
        setting(accept_sigma="variance")


def test_doubling_pays_the_sum_of_the_budgets_it_used():
    grid = baselines.geometric_grid(0.001, math.sqrt(2), 10.0)
    assert grid[0] == 0.001 and grid[-1] <= 10 and grid[-1] * math.sqrt(2) > 10
    rng = np.random.default_rng(0)
    release = baselines.doubling_laplace(1000.0, grid, 10.0, lambda y, s: s < 0.5, rng)
    last = int(np.argmax(1 / grid < 0.5))
    assert release.last == last and release.cost == pytest.approx(grid[: last + 1].sum())
    starved = baselines.doubling_laplace(1000.0, grid, 0.01, lambda y, s: False, rng)
    assert starved.estimate is None and starved.cost <= 0.01


@pytest.mark.parametrize("table, unit", [("table1", 1.0), ("table2", 0.5)])
def test_doubling_restarts_every_thread_at_the_bottom_and_pays_every_attempt(table, unit):
    """Each thread's charge is a prefix sum of the levels from the bottom (Table 2: of rho_i = eps_i/2,
    i.e. sigma^2 = 1/eps_i): every thread climbs again from eps_0 = 0.001. A run that carried on from
    the previous thread's level would pay sums that start higher up."""
    s = setting()
    prefix = np.cumsum(s.grid * unit)
    doubling = method(table, "doubling")
    counts = np.array([900, 700, 500, 400, 300, 250, 200])
    for seed in range(5):
        out = doubling.run(counts, s, np.random.default_rng(seed))
        assert out.answers >= 3
        for realised, worst in out.charges:
            assert realised == worst and np.isclose(realised, prefix, rtol=1e-12).any(), realised


def test_doubling_ends_the_run_at_the_first_attempt_that_does_not_fit():
    s = setting(budget=0.05)
    out = method("table1", "doubling").run(np.array([10**7, 1, 10**7]), s, np.random.default_rng(0))
    # thread 1 accepted at eps_0; thread 2 (count 1) climbs until the next level does not fit; no third thread
    assert out.answers == 1 and len(out.charges) == 2
    prefix = np.cumsum(s.grid)
    assert out.charges[1][0] == pytest.approx(prefix[prefix <= 0.049 + 1e-12][-1])


def test_noise_reduction_pays_only_the_accepted_budget():
    grid = np.array([0.01, 0.02, 0.04, 0.08])
    release = baselines.noise_reduction_laplace(100.0, grid, lambda y, s: s < 40, np.random.default_rng(0))
    assert release.last == 2 and release.cost == 0.04


class RecordDropping:
    """Wraps tuning.random_dropping_runs to record (level epsilons, copies, runs) of every Alg. 3 attempt."""

    def __init__(self, monkeypatch):
        self.calls = []
        original = tuning.random_dropping_runs

        def recorded(eps, eps_prime, dropping, rng, copies=None):
            runs = original(eps, eps_prime, dropping, rng, copies)
            self.calls.append((np.asarray(eps, dtype=float), np.asarray(copies), runs, dropping))
            return runs
        monkeypatch.setattr(tuning, "random_dropping_runs", recorded)


def test_default_alg3_drops_with_the_probability_thm11_requires(monkeypatch):
    """Across Alg. 3's attempts, a copy of level eps runs with probability E[e^{-eps k}], k ~ Geom_{e^{-eps'}}
    on {0, 1, ...}; the closed form here is summed directly from the geometric series."""
    recorder = RecordDropping(monkeypatch)
    s, eps_prime = setting(budget=2.0), 0.001
    alg3 = method("table1", "alg3")
    counts = np.array([400, 300, 200, 150, 100])
    for seed in range(60):
        alg3.run(counts, s, np.random.default_rng(seed))
    assert {d for *_, d in recorder.calls} == {"geometric"}
    p = math.exp(-eps_prime)
    k = np.arange(200_000)
    for level in (0, 3, 6):
        eps = s.grid[level]
        copies = sum(int(c[level]) for e, c, _, _ in recorder.calls if len(e) > level)
        runs = sum(int(r[level]) for e, _, r, _ in recorder.calls if len(e) > level)
        expected = float(np.sum((1 - p) * p**k * np.exp(-eps * k)))
        attempts = sum(len(e) > level for e, *_ in recorder.calls)
        assert attempts > 200
        # the copies of one attempt share k, so the standard error is over attempts, not copies
        assert runs / copies == pytest.approx(expected, abs=5 * math.sqrt(expected / attempts)), level
        assert expected < 0.55     # it does drop: at eps' = 0.001 half the bottom level's copies are dropped


def test_alg3_as_published_runs_every_level_that_fits_exactly_once(monkeypatch):
    recorder = RecordDropping(monkeypatch)
    s = setting(budget=3.0)
    out = method("table1", "alg3_as_published").run(np.array([600, 400, 300, 200]), s, np.random.default_rng(1))
    assert recorder.calls and all(d == "none" and np.all(r == 1) and np.all(c == 1) for _, c, r, d in recorder.calls)
    remaining = 3.0
    for (eps, *_), (realised, worst) in zip(recorder.calls, out.charges):
        assert np.array_equal(eps, s.grid[2 * s.grid + 0.001 <= remaining * (1 + 1e-12)])
        assert worst == pytest.approx(2 * eps[-1] + 0.001) and np.isclose(realised, 2 * eps + 0.001).any()
        remaining -= realised


def test_pure_runs_charge_each_mechanism_its_theorems_cost():
    """Counts so large that every release is accepted: doubling pays eps_0 per thread; noise reduction
    is admitted at the top budget that fits and pays eps_0; Alg. 3 pays 2 eps_i + eps' (Thm 11) for the
    release it selects and 0 for bottom, admitted at 2 max(eps) + eps'."""
    counts = np.full(5, 10**7)
    s = setting(budget=3.0)
    grid = s.grid
    rng = np.random.default_rng(4)
    doubling = method("table1", "doubling").run(counts, s, rng)
    assert doubling.charges == ((0.001, 0.001),) * 5 and doubling.answers == 5
    reduction = method("table1", "noise_reduction").run(counts, s, rng)
    remaining = 3.0
    for realised, worst in reduction.charges:
        assert realised == pytest.approx(0.001) and worst == grid[grid <= remaining][-1]
        remaining -= realised
    eps_prime = 0.001
    alg3 = method("table1", "alg3").run(counts, s, rng)
    remaining = 3.0
    for realised, worst in alg3.charges:
        fits = grid[2 * grid + eps_prime <= remaining * (1 + 1e-12)]
        assert worst == pytest.approx(2 * fits[-1] + eps_prime)
        assert realised == 0.0 or np.isclose(realised, 2 * fits + eps_prime).any()
        remaining -= realised
    assert sum(r > 0 for r, _ in alg3.charges) == alg3.answers == 5


def test_brownian_pays_half_its_stopping_time_and_caps_the_path_to_fit():
    s = setting(budget=3.0)
    out = method("table2", "brownian").run(np.array([10**6, 400, 5, 10**6]), s, np.random.default_rng(2))
    remaining = s.rho
    for realised, worst in out.charges:
        fits = s.grid[s.grid / 2 <= remaining * (1 + 1e-12)]
        assert worst == pytest.approx(fits[-1] / 2) and np.isclose(realised, fits / 2).any()
        remaining -= realised
    assert out.charges[0][0] == pytest.approx(0.0005)     # a huge count is accepted at t_0 = eps_0
    assert out.spent <= s.rho * (1 + 1e-12)


NAMES = {"table1": ["doubling", "noise_reduction", "alg3", "alg3_as_published"],
         "table2": ["brownian", "doubling", "alg3", "alg3_as_published"]}


@pytest.mark.parametrize("table", ["table1", "table2"])
def test_runs_never_overspend(table):
    s = setting(budget=5.0)
    budgets = {"table1": dict.fromkeys(NAMES["table1"], 5.0),
               "table2": {"brownian": s.rho, "doubling": s.rho, "alg3": 5.0 - math.log(1e6) / 31,
                          "alg3_as_published": 5.0 - math.log(1e6) / 99}}[table]
    counts = np.array([6000, 3500, 2000, 1200, 800, 400, 100, 30, 10])
    for m in methods(table):
        for seed in range(3):
            out = m.run(counts, s, np.random.default_rng(seed))
            assert out.spent <= budgets[m.name] * (1 + 1e-12), m.name
            assert all(r <= w * (1 + 1e-12) for r, w in out.charges), m.name
            assert 0 <= out.correct <= out.answers <= len(counts)


def test_more_users_mean_more_answers():
    rng = np.random.default_rng(3)
    small = np.array([60, 40, 30, 20, 10])
    large = small * 20
    s = setting()
    for m in methods("table1"):
        a = np.mean([m.run(small, s, rng).answers for _ in range(5)])
        b = np.mean([m.run(large, s, rng).answers for _ in range(5)])
        assert b >= a, m.name


def test_thread_orders():
    counts = np.array([3, 50, 7, 900])
    orders = threads.THREAD_ORDERS
    assert orders["given"].order(counts, np.random.default_rng(0)).tolist() == [3, 50, 7, 900]
    assert orders["by_count"].order(counts, np.random.default_rng(0)).tolist() == [900, 50, 7, 3]
    shuffled = orders["random"].order(counts, np.random.default_rng(0))
    assert sorted(shuffled.tolist()) == [3, 7, 50, 900]
    assert shuffled.tolist() == orders["random"].order(counts, np.random.default_rng(0)).tolist()
    # the runs take the threads in the order given: a tiny first thread ends doubling's run at once
    first_small = method("table1", "doubling").run(np.array([1, 10**6, 10**6]), setting(), np.random.default_rng(0))
    assert first_small.answers == 0


def test_guarantee_labels():
    """Every method states what its numbers guarantee; the as-published modes say they guarantee nothing;
    an order that reads the true counts makes every guarantee conditional."""
    for table in ("table1", "table2"):
        labels = experiments.guarantees(settings().thread_table(table), settings())
        assert list(labels) == NAMES[table]
        assert labels["alg3_as_published"].startswith("NONE") and "not a guarantee" in labels["alg3_as_published"]
        for name in NAMES[table][:-1]:
            assert labels[name].startswith("10-DP" if table == "table1" else "(10, 1e-06)-DP"), labels[name]
            assert "public" not in labels[name]
        ranked_settings = settings(thread_order="by_count")
        ranked = experiments.guarantees(ranked_settings.thread_table(table), ranked_settings)
        assert all("ranking of the threads by count is public" in ranked[n] for n in NAMES[table][:-1])
        assert "public" not in ranked["alg3_as_published"]
    assert "rho = 1.353" in experiments.guarantees(settings().table2, settings())["brownian"]


def test_unknown_method_is_refused():
    with pytest.raises(UserError, match="expost.table1.methods"):
        methods("table1", {**CFG, "table1": {**CFG["table1"], "methods": ["doubling", "brownian"]}})


def test_thread_table_is_one_row_per_method_with_the_papers_values_and_the_guarantee():
    frame = pd.DataFrame({"method": ["doubling"] * 2 + ["alg3"] * 2 + ["alg3_as_published"] * 2, "trial": [0, 1] * 3,
                          "answers": [14, 16, 20, 22, 20, 21], "correct": [13, 15, 18, 20, 18, 19],
                          "precision": [13 / 14, 15 / 16, 0.9, 20 / 22, 0.9, 19 / 21], "spent": [10.0] * 6})
    table = experiments.thread_table({"S8000": frame}, settings().table1, settings()).set_index("method")
    assert table.loc["doubling", "answers"] == 15 and table.loc["doubling", "answers_sd"] == 1
    assert table.loc["doubling", "answers_within_paper_sd"]          # 15 vs 14.77 +- 0.47
    assert table.loc["alg3", "paper_answers"] == table.loc["alg3_as_published", "paper_answers"] == 20.37
    assert not table.loc["alg3", "answers_within_paper_sd"]          # 21 vs 20.37 +- 0.52
    assert table.loc["alg3_as_published", "guarantee"].startswith("NONE")
    assert table.loc["alg3", "guarantee"].startswith("10-DP")
