"""DPareto's acquisition with epsilon known: the vectorised privacy model against the oracle, the region
EHVI against Monte Carlo, the paper's HVPoI pinned, and the front query's answers."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptradeoff.baselines.random_search import sample
from dptradeoff.bo.ehvi import ErrorRegionEHVI, RegionEHVI
from dptradeoff.bo.exact_privacy import DPSGDTable, DPSGDTableForPLD, VectorisedOracle, for_problem
from dptradeoff.bo.propose import Context, Settings, propose, replication_noise
from dptradeoff.bo.query import FrontQuery, query_rng
from dptradeoff.privacy import dpsgd, svt, wor_gaussian
from dptradeoff.problems import PROBLEMS, Oracle, Param, Problem

from test_bo import TOY, toy_oracle

N_ADULT = 26048


def test_hvpoi_proposes_what_it_proposed_before():
    """The paper's algorithm (privacy GP + HVPoI) is unchanged: proposals on fixed inputs, recorded
    before the exact-privacy acquisition was added (equal up to BLAS rounding). On this session's
    machine, at the recording commit too, the single proposal moved by 2e-6, the batch's points by up
    to 2e-3 and the adult proposal by 2e-4 (relative): L-BFGS-B ends elsewhere on another BLAS's sums."""
    rng = np.random.default_rng(3)
    evals = toy_oracle(pd.DataFrame(rng.random((14, 2)), columns=["a", "b"]))
    one = propose(TOY, evals, 1, Settings(candidates=800, gp_restarts=2), np.random.default_rng(11)).points
    # rtol 2e-2: on the 2-core development machine at 4e125e8 the proposal's b moved by 9.6e-3 (L-BFGS-B again)
    np.testing.assert_allclose(one[["a", "b", "acquisition"]].to_numpy(), [[0.0, 0.2889935495519061, 1.8783749083017236]],
                               rtol=2e-2, atol=1e-9)
    batch = propose(TOY, evals, 3, Settings(candidates=800, gp_restarts=2, reference="fixed"),
                    np.random.default_rng(11)).points
    np.testing.assert_allclose(batch[["a", "b", "acquisition"]].to_numpy(),
                               [[0.0, 0.2889873079102995, 1.879815464745671],
                                [0.5600134766883652, 0.30755506429080004, 0.2724009524174007],
                                [0.18435444509570736, 0.30210182911699207, 0.19042980247845948]], rtol=5e-3, atol=1e-9)
    problem = PROBLEMS["adult-logreg-sgd"].with_conversion("dp_accounting")   # the accountant of the recording
    points = sample(problem, 20, np.random.default_rng(5))
    points["epsilon"] = [dpsgd.epsilon(30000, int(r.lot_size), int(r.epochs), float(r.noise), 1e-5) for r in points.itertuples()]
    points["error"] = np.clip(0.16 + 0.1 / (1 + points["epsilon"]) + 0.01 * np.random.default_rng(6).standard_normal(20),
                              0.01, 0.99)
    adult = propose(problem, points, 1, Settings(candidates=1000, gp_restarts=2, refit_every=16),
                    np.random.default_rng(12)).points
    np.testing.assert_allclose(adult[problem.names + ["acquisition"]].to_numpy(),
                               [[1.0, 8.0, 0.0005, 1.3294112686061057, 0.1, 0.4581542579969742]], rtol=1e-3)


def test_rdp_over_many_ratios_equals_rdp_ratio_by_ratio():
    ratios = np.geomspace(8 / N_ADULT, 0.5, 9)
    for sigma in (0.1, 0.49, 0.5, 0.8, 2.0, 16.0):
        many = wor_gaussian.rdp_over_ratios(ratios, sigma, dpsgd.ALL_ORDERS)
        one = np.stack([wor_gaussian.rdp(q, sigma, dpsgd.ALL_ORDERS) for q in ratios])
        np.testing.assert_allclose(many, one, rtol=1e-12)


@pytest.mark.parametrize("conversion", ["dp_accounting", "classic"])
@pytest.mark.parametrize("n", [N_ADULT, 4000])
def test_vectorised_epsilon_is_the_oracles_at_the_table_nodes(conversion, n):
    """Where lot and noise are nodes of the table, the vectorised epsilon is dpsgd.epsilon itself, for any
    epochs: the steps (epochs * round(n / lot)), the conversion and its choice of orders are the oracle's.
    (A step count off by one moves epsilon by >= 2e-5 relative here: the test fails.)"""
    problem = PROBLEMS["adult-logreg-sgd"].with_conversion(conversion)
    table = DPSGDTable(problem, n)
    rng = np.random.default_rng(0)
    lots = table.lots[rng.integers(0, len(table.lots), 150)]
    noises = table.noises[rng.integers(0, len(table.noises), 150)]
    epochs = rng.integers(1, 65, 150)
    points = np.column_stack([epochs, lots, np.full(150, 0.01), noises, np.ones(150)]).astype(float)
    vectorised = table.ranking(points)
    oracle = [dpsgd.epsilon(n, int(lot), int(e), float(z), problem.delta, conversion) for e, lot, z in zip(epochs, lots, noises)]
    np.testing.assert_allclose(vectorised, oracle, rtol=1e-9)
    np.testing.assert_allclose(table.exact(points[:20]), oracle[:20], rtol=0)


def test_vectorised_epsilon_ranks_random_candidates_within_a_few_per_cent():
    problem = PROBLEMS["adult-logreg-sgd"].with_conversion("dp_accounting")
    table = DPSGDTable(problem, N_ADULT)
    rng = np.random.default_rng(1)
    points = np.column_stack([rng.integers(1, 65, 300), rng.integers(8, 513, 300), np.full(300, 0.01),
                              np.exp(rng.uniform(np.log(0.1), np.log(16), 300)), np.ones(300)]).astype(float)
    oracle = np.array([dpsgd.epsilon(N_ADULT, int(p[1]), int(p[0]), p[3], 1e-5) for p in points])
    relative = np.abs(table.ranking(points) / oracle - 1)
    assert np.median(relative) < 1e-3 and relative.max() < 0.05


def test_under_the_tight_accountant_the_table_ranks_by_a_bound_and_the_finalists_are_the_oracles():
    """WBK19's table ranks (never below the tight epsilon: a valid bound on the same mechanism, not taken as exact);
    `exact` is the oracle's tight epsilon itself."""
    problem = PROBLEMS["adult-logreg-sgd"]
    rng = np.random.default_rng(4)
    points = np.column_stack([rng.integers(1, 17, 40), rng.integers(8, 513, 40), np.full(40, 0.01),
                              np.exp(rng.uniform(np.log(0.3), np.log(16), 40)), np.ones(40)]).astype(float)
    model = for_problem(problem, N_ADULT, 5000, points)
    assert isinstance(model, DPSGDTableForPLD) and not model.ranking_is_exact
    tight = [dpsgd.epsilon(N_ADULT, int(p[1]), int(p[0]), p[3], 1e-5, "pld") for p in points]
    assert (model.ranking(points) >= np.array(tight) * 0.97).all()   # the table interpolates to a few per cent
    assert model.exact(points[:8]).tolist() == tight[:8]


def test_svt_epsilons_are_its_epsilon():
    rng = np.random.default_rng(2)
    points = np.column_stack([rng.integers(1, 31, 50), np.exp(rng.uniform(np.log(0.01), np.log(100), 50))])
    model = for_problem(PROBLEMS["svt"], None, 5000, points)
    assert isinstance(model, VectorisedOracle)
    np.testing.assert_allclose(model.ranking(points), [svt.epsilon(int(c), b) for c, b in points], rtol=1e-13)


def _monte_carlo_improvement(acquisition, x, mean, sd, transform, draws=400_000):
    """E[area the staircase gains] by sampling y and integrating the staircase numerically."""
    rng = np.random.default_rng(0)
    y = transform(mean + sd * rng.standard_normal(draws))
    grid = np.linspace(acquisition.x_lo, acquisition.x_hi, 4001)
    heights = np.full(len(grid), acquisition.cap)
    for start, end, height in zip(acquisition.starts, acquisition.ends, acquisition.heights):
        heights[(grid >= start) & (grid < end)] = height
    right = grid >= max(x, acquisition.x_lo)
    dx = grid[1] - grid[0]
    return float(np.mean(np.maximum(0.0, heights[right][None, :] - y[:, None][:20000]).sum(axis=1) * dx)), y


def test_region_ehvi_equals_monte_carlo_in_logit_and_in_error_space():
    front_x = np.log([0.005, 0.05, 0.4, 3.0, 30.0])
    front_y = np.array([-0.9, -1.2, -1.5, -1.7, -1.9])     # logit errors of the front points' GP means
    lo, hi, cap = np.log(0.01), np.log(10.0), -1.1            # cap: the floor's logit (error 0.25)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))   # noqa: E731
    for x, mean, sd in ((np.log(0.02), -1.4, 0.3), (np.log(1.0), -1.8, 0.2), (np.log(0.001), -1.0, 0.5)):
        logit = RegionEHVI(front_x, front_y, lo, hi, cap)
        expected, _ = _monte_carlo_improvement(logit, x, mean, sd, lambda v: v)
        assert logit(np.array([x]), np.array([mean]), np.array([sd]))[0] == pytest.approx(expected, rel=0.03, abs=1e-4)
        error = ErrorRegionEHVI(front_x, front_y, lo, hi, cap)
        expected, _ = _monte_carlo_improvement(error, x, mean, sd, sigmoid)
        assert error(np.array([x]), np.array([mean]), np.array([sd]))[0] == pytest.approx(expected, rel=0.03, abs=1e-5)


def test_a_point_sure_to_be_at_the_floor_earns_nothing_wherever_its_epsilon():
    ehvi = ErrorRegionEHVI(np.log([0.05, 1.0]), np.array([-1.3, -1.6]), np.log(0.01), np.log(10.0), -1.1)
    corner = ehvi(np.log([0.011]), np.array([-0.5]), np.array([1e-3]))    # far below the others' epsilon, error above the floor
    useful = ehvi(np.log([0.011]), np.array([-1.4]), np.array([1e-3]))
    assert corner[0] == 0.0 and useful[0] > 0


def test_exact_privacy_proposals_record_the_oracles_epsilon_and_a_batch_of_distinct_points():
    problem = PROBLEMS["adult-logreg-sgd"].restricted({"epochs": [1, 16]})
    points = sample(problem, 20, np.random.default_rng(5))
    points["epsilon"] = [dpsgd.epsilon(N_ADULT, int(r.lot_size), int(r.epochs), float(r.noise), 1e-5) for r in points.itertuples()]
    points["error"] = np.clip(0.16 + 0.1 / (1 + points["epsilon"]), 0.01, 0.99)
    for acquisition in ("ehvi", "ehvi-logit", "hvpoi-region"):
        settings = Settings(candidates=1000, gp_restarts=2, privacy_model="exact", acquisition=acquisition)
        out = propose(problem, points, 3, settings, np.random.default_rng(1), context=Context(N_ADULT, 0.24)).points
        assert out["privacy_model"].str.startswith("exact").all()
        for row in out.itertuples():
            assert row.predicted_epsilon == dpsgd.epsilon(N_ADULT, row.lot_size, row.epochs, row.noise, 1e-5, "pld")
        assert len({tuple(r) for r in out[problem.names].to_numpy()}) == 3
        assert out["epochs"].dtype.kind == "i" and out["lot_size"].dtype.kind == "i"


def test_replication_noise_is_the_standard_error_in_logit_error():
    evals = pd.DataFrame({"utility_runs": [[0.8, 0.82, 0.84], [0.7], [0.5, 0.5]]})
    evals["error"] = [1 - np.mean(r) for r in evals["utility_runs"]]
    noise = replication_noise(evals)
    e = 0.18
    assert noise[0] == pytest.approx(np.var([0.8, 0.82, 0.84], ddof=1) / 3 / (e * (1 - e)) ** 2)
    assert noise[1] == 0 and noise[2] == 0


class KnownFront(Oracle):
    """epsilon = 10^(2a - 1) exactly (vectorised too); utility 1 - the toy's error: for epsilon <= 1 the
    best point is a = 0.5, b = 0.3."""
    def epsilon(self, point, *, n, delta):
        return 10 ** (2 * point["a"] - 1)

    def epsilons(self, points, *, n, delta):
        return 10 ** (2 * np.asarray(points)[:, 0] - 1)


KNOWN = Problem("known", None, KnownFront(), domain=(Param("a", 0.0, 1.0), Param("b", 0.0, 1.0)), delta=0.0)


def _known_chain(points: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    evals = toy_oracle(pd.DataFrame(rng.random((points, 2)), columns=["a", "b"]))
    evals["utility"] = 1 - evals["error"]
    evals["index"] = range(points)
    return evals


def test_the_front_query_finds_a_known_constrained_optimum():
    """The GP's search of the whole domain (`search`) finds the optimum between the trained points."""
    evals = _known_chain()
    for seed in range(3):
        query = FrontQuery(KNOWN, evals, None, Settings(candidates=2000, gp_restarts=3), query_rng(seed, "known", "eps", 1.0, 0))
        answer = query.for_epsilon(1.0, search=True)
        assert answer.epsilon <= 1.0 and answer.point["a"] == pytest.approx(0.5, abs=0.01)
        assert answer.point["b"] == pytest.approx(0.3, abs=0.06)
        assert answer.epsilon == 10 ** (2 * answer.point["a"] - 1)


def test_the_cli_and_the_query_rule_give_the_same_answer(tmp_path, monkeypatch, capsys):
    """`dptradeoff front --epsilon` prints the `query` rule's answer from its file once the rule has run (searched,
    settled and retrained: the command and the front table agree), the same point and epsilon."""
    import yaml

    from dptradeoff.__main__ import main
    from dptradeoff.bo.query_round import answer_and_train
    from dptradeoff.problems.tables import write_frame

    problem = PROBLEMS["svt"]
    rng = np.random.default_rng(0)
    points = pd.DataFrame({"bound": rng.integers(1, 31, 24), "b": np.exp(rng.uniform(np.log(0.01), np.log(100), 24))})
    from dptradeoff.problems.evaluate import evaluate

    evals = evaluate(problem, points, None, 20, 0, "dpareto", 0)
    chain = tmp_path / "results/dpareto/svt/dpareto/0/evaluations.parquet"
    chain.parent.mkdir(parents=True)
    write_frame(evals, str(chain), {})
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"seed": 7, "dpareto": {"candidates": 500}}))
    (tmp_path / "config").symlink_to(Path(__file__).resolve().parents[1] / "config")
    monkeypatch.chdir(tmp_path)
    from dptradeoff.config import load

    loaded = load([str(config)])
    settings = Settings.from_config(loaded["dpareto"], loaded["statistics"])
    answered = answer_and_train(problem, str(chain), "eps", 1.0, settings, 20, 7, 0)
    row = answered.iloc[0]
    main(["front", "--problem", "svt", "--epsilon", "1", f"--configfile={config}"])
    # before the rule's file exists: the chain asked without training (the rule searched and settled beyond it)
    assert "the query rule's answer" not in capsys.readouterr().out
    from dptradeoff import paths

    write_frame(answered, paths.query("svt", "eps", "1"), {})
    main(["front", "--problem", "svt", "--epsilon", "1", f"--configfile={config}"])
    printed = capsys.readouterr().out
    assert "the query rule's answer" in printed
    suggested = next(line for line in printed.splitlines() if line.startswith("suggested:"))
    assert f"bound={int(row['bound'])}" in suggested and f"b={row['b']:.4g}" in suggested
    exact = next(line for line in printed.splitlines() if line.startswith("  epsilon "))
    assert math.isclose(float(exact.split()[1].rstrip(";")), row["epsilon"], rel_tol=1e-3)


def test_full_refits_in_the_first_rounds_then_every_kth():
    settings = Settings.from_config({"candidates": 10, "gp_restarts": 1, "reference": "adaptive", "gp_refit_every": 16,
                                     "inputs": "log-unit-cube", "gp_full_refits_first": 4})
    assert [r for r in range(40) if settings.full_refit(r)] == [0, 1, 2, 3, 16, 32]
    assert [r for r in range(40) if Settings(refit_every=16).full_refit(r)] == [0, 16, 32]


def test_utility_cap_enters_errors_above_the_floor_as_the_floor(monkeypatch):
    from dptradeoff.bo import propose as propose_module
    from dptradeoff.bo.transforms import error_to_gp
    problem = PROBLEMS["adult-logreg-sgd"].restricted({"epochs": [1, 16]})
    points = sample(problem, 20, np.random.default_rng(5))
    points["epsilon"] = [dpsgd.epsilon(N_ADULT, int(r.lot_size), int(r.epochs), float(r.noise), 1e-5) for r in points.itertuples()]
    points["error"] = np.linspace(0.15, 0.45, 20)     # half of them worse than the floor 0.3
    fitted = propose_module.fit_surrogates(problem, points, Settings(gp_restarts=1), np.random.default_rng(0),
                                           fit_privacy=False, error_cap=0.3).utility
    targets = fitted.y * fitted.y_std + fitted.y_mean
    assert targets.max() == pytest.approx(float(error_to_gp(0.3)))
    assert np.sum(np.isclose(targets, float(error_to_gp(0.3)))) == np.sum(points["error"] >= 0.3)
    caps = []
    real = propose_module.fit_surrogates
    monkeypatch.setattr(propose_module, "fit_surrogates", lambda *a, **k: caps.append(k["error_cap"]) or real(*a, **k))
    for cap in ("floor", "none"):
        settings = Settings(candidates=200, gp_restarts=1, privacy_model="exact", acquisition="hvpoi-region", utility_cap=cap)
        propose(problem, points, 1, settings, np.random.default_rng(1), context=Context(N_ADULT, 0.3))
    assert caps == [0.3, None]


def test_the_papers_hvpoi_refuses_settings_it_does_not_have(tmp_path):
    from dptradeoff.config import load
    from dptradeoff import UserError
    configfile = tmp_path / "exact-hvpoi.yaml"
    configfile.write_text("dpareto: {privacy_model: exact, acquisition: hvpoi}\n")
    with pytest.raises(UserError, match=r"hvpoi.*privacy_model: gp.*\{'privacy_model': 'exact'\}"):
        load(["config/config.yaml", str(configfile)])
    problem = PROBLEMS["adult-logreg-sgd"]
    points = sample(problem, 8, np.random.default_rng(0)).assign(epsilon=1.0, error=0.2)
    with pytest.raises(ValueError, match="hvpoi"):
        propose(problem, points, 1, Settings(privacy_model="exact", acquisition="hvpoi"), np.random.default_rng(0),
                context=Context(N_ADULT, 0.24))


def test_a_floor_margin_makes_a_point_just_below_the_floor_worth_nothing(monkeypatch):
    from dptradeoff.bo import propose as propose_module
    caps = []
    real = propose_module.region_acquisition
    monkeypatch.setattr(propose_module, "region_acquisition", lambda s, x, y, cap, region=None: caps.append(cap) or real(s, x, y, cap, region))
    problem = PROBLEMS["adult-logreg-sgd"].restricted({"epochs": [1, 16]})
    points = sample(problem, 12, np.random.default_rng(5))
    points["epsilon"] = [dpsgd.epsilon(N_ADULT, int(r.lot_size), int(r.epochs), float(r.noise), 1e-5) for r in points.itertuples()]
    points["error"] = np.linspace(0.15, 0.3, 12)
    settings = Settings.from_config({"candidates": 100, "gp_restarts": 1, "reference": "adaptive", "gp_refit_every": 1,
                                     "inputs": "log-unit-cube", "privacy_model": "exact", "acquisition": "hvpoi-region",
                                     "floor_margin": 0.01})
    propose(problem, points, 1, settings, np.random.default_rng(1), context=Context(N_ADULT, 0.24))
    assert caps[0] == pytest.approx(np.log(0.23 / 0.77))
