"""Every epsilon the pipeline computes, over a grid of inputs, through the public functions its
modules import (the names the accountant refactor kept): recorded from the code before the
refactor (commit d25db2f, tests/privacy_values.json), recomputed by tests/test_accountant.py and
compared exactly; the test also computes them through the accountant and its events.

    python tests/privacy_values.py record tests/privacy_values.json   # the test's grid
    python tests/privacy_values.py record /tmp/full.json --full       # a larger grid, compared by hand
    python tests/privacy_values.py compare /tmp/before.json /tmp/after.json

(Run with an older tree's src/ first on PYTHONPATH to record its values.)

Values are stored as JSON (floats as repr: exact round trip, inf and nan included) and compared as
such: equal means bit for bit.
"""
from __future__ import annotations

import itertools
import json
import math
import sys

import numpy as np


def _float(x):
    return None if x is None else float(x)


def _floats(xs):
    return [float(x) for x in np.asarray(xs, dtype=float).ravel()]


CONVERSIONS = ("dp_accounting", "classic")


def dpsgd_runs(full: bool) -> list[tuple]:
    """(n, lot, epochs, noise, delta) of the DP-SGD epsilons."""
    ns = (500, 857, 1000, 5000, 32561, 60000) if full else (857, 32561)
    lots = (8, 64, 256, 1024, 4000) if full else (16, 256)
    epochs = (1, 5, 20, 100, 400) if full else (1, 10)
    noises = (0.0, 0.3, 0.8, 1.5, 4.0, 16.0, 53.286, 1e3, math.inf) if full else (0.0, 0.5, 1.1, 7.73, 53.286)
    return [run for run in itertools.product(ns, lots, epochs, noises, (1e-5, 1e-6)) if run[1] <= run[0]]


def calibrations(full: bool) -> list[tuple]:
    """(n, lot, epochs, target epsilon, delta) of the noise calibrations."""
    settings = [(857, 256, 5, 0.2, 1e-6), (32561, 256, 10, 1.0, 1e-5), (1000, 10, 3, 0.5, 1e-5),
                (60000, 600, 20, 2.0, 1e-5), (500, 8, 1, 0.05, 1e-6), (1000, 100, 50, 8.0, 1e-5)]
    if full:
        settings += [(n, lot, e, target, 1e-6) for n, lot, e, target in itertools.product(
            (857, 5000, 32561), (16, 256), (1, 5, 40), (0.1, 0.5, 2.0)) if lot <= n]
    return settings


def dpsgd_values(full: bool) -> dict:
    from dptradeoff.privacy import dpsgd

    runs = dpsgd_runs(full)
    out = {f"dpsgd.epsilon[{conversion}]": [dpsgd.epsilon(*run, conversion) for run in runs]
           for conversion in CONVERSIONS}
    first_epochs = min(e for _, _, e, _, _ in runs)
    out["dpsgd.rdp_curve"] = [_floats(dpsgd.rdp_curve(n, lot, z, dpsgd.steps(n, lot, e), orders))
                              for n, lot, e, z, delta in runs if e == first_epochs and delta == 1e-5
                              for orders in (dpsgd.ORDERS, dpsgd.ALL_ORDERS)]
    rng = np.random.default_rng(5)
    curves = np.concatenate([rng.exponential(scale, (8, len(dpsgd.ALL_ORDERS))) for scale in (1e-6, 1e-2, 1.0, 30.0)])
    curves = np.concatenate([curves, [dpsgd.rdp_curve(857, 256, z, 25, dpsgd.ALL_ORDERS) for z in (0.7, 5.0, 53.286)]])
    for conversion, delta in itertools.product(CONVERSIONS, (1e-5, 1e-6)):
        out[f"dpsgd.convert_curves[{conversion}, {delta}]"] = _floats(dpsgd.convert_curves(curves, delta, conversion))
    out["dpsgd.improved_conversion"] = [list(map(float, dpsgd.improved_conversion(list(dpsgd.ALL_ORDERS), list(c), d)))
                                        for c in curves for d in (1e-5, 1e-6)]
    for conversion in CONVERSIONS:
        out[f"dpsgd.calibrate_noise[{conversion}]"] = [
            None if cal is None else [cal.noise, cal.epsilon]
            for cal in (dpsgd.calibrate_noise(*s, conversion) for s in calibrations(full))]
    out["dpsgd.steps"] = [dpsgd.steps(*setting) for setting in dict.fromkeys(run[:3] for run in runs)]
    return out


def gaussian_releases(full: bool) -> list[tuple]:
    """(sigma, sensitivity, delta) of the analytic Gaussian mechanism's epsilons."""
    sigmas = (0.0, 0.05, 0.3, 1.0, 3.0, 10.0) if full else (0.0, 0.3, 1.0, 10.0)
    return list(itertools.product(sigmas, (0.01, 0.5, 1.0, 4.0), (1e-5, 1e-6)))


def output_perturbations(full: bool) -> list[tuple]:
    """(gamma, sigma, n, delta) of output perturbation's epsilons."""
    gammas = (1e-4, 1e-3, 1e-2, 0.1, 1.0) if full else (1e-3, 0.1)
    sigmas = (0.0, 0.05, 0.3, 1.0, 3.0, 10.0) if full else (0.0, 0.3, 1.0, 10.0)
    return list(itertools.product(gammas, sigmas, (100, 1000, 32561) if full else (32561,), (1e-6,)))


def gaussian_values(full: bool) -> dict:
    from dptradeoff.privacy import gaussian
    from dptradeoff.train import outpert

    return {
        "gaussian.epsilon": [gaussian.epsilon(*release) for release in gaussian_releases(full)],
        "outpert.sensitivity": [outpert.sensitivity(g, n) for g, n in dict.fromkeys((g, n) for g, _, n, _ in
                                                                                      output_perturbations(full))],
        # train/outpert.epsilon's body before the refactor (the function moved to the accountant)
        "outpert.epsilon": [gaussian.epsilon(s, outpert.sensitivity(g, n), d)
                            for g, s, n, d in output_perturbations(full)],
    }


def sparse_vectors(full: bool) -> list[tuple]:
    """(C, b) of SVT's epsilons."""
    return [(c, float(b)) for c, b in itertools.product(range(1, 31) if full else (1, 2, 10, 30),
                                                        np.geomspace(1e-2, 1e2, 41 if full else 7))]


def svt_values(full: bool) -> dict:
    from dptradeoff.privacy import svt

    pairs = sparse_vectors(full)
    return {
        "svt.epsilon": [svt.epsilon(c, b) for c, b in pairs],
        "svt.epsilon_many": _floats(svt.epsilon_many(np.array([c for c, _ in pairs]), np.array([b for _, b in pairs]))),
        "svt.noise_split": [list(svt.noise_split(b, c)) for c, b in pairs],
    }


def objective_perturbations(full: bool) -> list[tuple]:
    """(eps, n, lambda, c) of objective perturbation's calibrations."""
    return list(itertools.product((0.01, 0.1, 0.5, 1.0, 5.0) if full else (0.1, 1.0), (100, 5000),
                                  (1e-4, 1e-2) if full else (1e-3,), (0.25, 1.0)))


def objective_perturbation_values(full: bool) -> dict:
    from dptradeoff.taylor import objective_perturbation as op

    grid = objective_perturbations(full)
    noises = [op.noise_parameters(*g) for g in grid]
    return {
        "objective_perturbation.noise_parameters": [[x.beta, x.delta, x.d_beta, x.d_delta] for x in noises],
        "objective_perturbation.privacy_loss": [op.privacy_loss(x.beta, x.delta, n, lam, c)
                                                for x, (_, n, lam, c) in zip(noises, grid)],
    }


PS_ORDER = 6.5   # paper 004's Table 3 converts at one order alpha, added to ORDERS
PS_RUNS = ((1000, 50, 5, 1.2), (32561, 256, 10, 4.0), (60000, 600, 40, 0.9))   # (n, lot, epochs, noise)
PS_REPETITIONS = ((0.0, 5.0), (1.0, 10.0), (0.5, 3.0))   # (eta, mean)
LEMMA7 = list(itertools.product((0.0, 0.3, 2.0), (1.5, 8.0, 32.0), (1e-5, 1e-6)))   # (RDP, alpha, delta)


def expost_values(full: bool) -> dict:
    from dptradeoff.expost import baselines, filter as expost_filter
    from dptradeoff.privacy import dpsgd

    deltas, times = (1e-5, 1e-6), np.array([0.1, 1.0, 7.5, 100.0])
    product = itertools.product
    out = {
        "baselines.zcdp_rho": [_float(baselines.zcdp_rho(e, d)) for e, d in product((0.01, 0.1, 0.5, 1.0, 4.0), deltas)],
        "baselines.zcdp_epsilon": [baselines.zcdp_epsilon(r, d) for r, d in product((1e-4, 0.01, 0.3, 2.0), deltas)],
        "baselines.brownian_boundary": [list(baselines.brownian_boundary(t, d))
                                        for t, d in product((0.5, 10.0, 300.0), deltas)],
        "baselines.brownian_epsilon": _floats(baselines.brownian_epsilon(times, 0.05, 115.1)),
        "baselines.zcdp_brownian_rho": _floats(baselines.zcdp_brownian_rho(times)),
        "filter.rdp_to_dp": [expost_filter.rdp_to_dp(*setting) for setting in LEMMA7],
        "filter.dp_to_rdp_budget": [expost_filter.dp_to_rdp_budget(e, a, d)
                                    for e, a, d in product((2.0, 4.0), (16.0, 32.0), deltas)],
    }
    orders = np.array(sorted(set(dpsgd.ORDERS) | {PS_ORDER}))
    curves = [dpsgd.rdp_curve(n, lot, z, dpsgd.steps(n, lot, e), tuple(orders)) for n, lot, e, z in PS_RUNS]
    curves.append(np.max(curves, axis=0))   # a random choice among the runs (expost.ml.doubling_trial)
    out["baselines.papernot_steinke_rdp"] = [_floats(baselines.papernot_steinke_rdp(orders, c, eta, mean))
                                             for c in curves for eta, mean in PS_REPETITIONS]
    filt = expost_filter.ExPostFilter(2.0)
    trace = []
    for realised, worst in ((0.3, 0.5), (0.5, 0.5), (0.0, 0.9), (0.7, 0.8)):
        admitted = filt.admits(worst)
        if admitted:
            filt.charge(realised, worst)
        trace.append([admitted, filt.spent, filt.remaining])
    out["filter.ExPostFilter"] = trace
    return out


PROPOSE_TEST = list(itertools.product((0.01, 0.05, 0.2, 1.0), (0, 1, 10, 100, 1000), (1e-6, 1e-3)))   # (eps0, T, delta')


def proposetest_values(full: bool) -> dict:
    from dptradeoff.proposetest import accounting

    return {
        "accounting.advanced_composition": [accounting.advanced_composition(*g) for g in PROPOSE_TEST],
        "accounting.total": [[t.epsilon, t.delta, t.tuning_epsilon, t.iterations]
                             for t in (accounting.total(1.5, 1e-5, *g) for g in PROPOSE_TEST)],
    }


def oracle_values(full: bool) -> dict:
    from dptradeoff.problems import PROBLEMS

    out = {}
    points = {
        "adult-logreg-sgd": [{"epochs": e, "lot_size": lot, "learning_rate": 0.01, "noise": z, "clip": 1.0}
                             for e, lot, z in itertools.product((1, 8), (16, 256), (0.7, 3.0))],
        "adult-logreg-outpert": [{"gamma": g, "sigma": s} for g, s in itertools.product((1e-3, 0.1), (0.5, 4.0))],
        "svt": [{"bound": c, "b": b} for c, b in itertools.product((1, 12), (0.1, 10.0))],
    }
    for name, pts in points.items():
        for conversion in CONVERSIONS:
            problem = PROBLEMS[name].with_conversion(conversion)
            out[f"oracle[{name}, {conversion}]"] = [problem.oracle.epsilon(p, n=30000, delta=problem.delta) for p in pts]
            out[f"oracle.conversion[{name}, {conversion}]"] = problem.oracle.conversion
    svt = PROBLEMS["svt"].oracle
    points = np.array([[1.0, 0.1], [12.4, 10.0], [30.0, 2.0]])
    out["oracle.epsilons[svt]"] = _floats(svt.epsilons(points, n=None, delta=None))
    return out


def table_values(full: bool) -> dict:
    """The acquisition's vectorised DP-SGD epsilons (a table of per-step RDP, converted by the oracle's rule)."""
    from dptradeoff.bo.exact_privacy import DPSGDTable
    from dptradeoff.problems import PROBLEMS

    out = {}
    rng = np.random.default_rng(3)
    for conversion in CONVERSIONS:
        problem = PROBLEMS["adult-logreg-sgd"].with_conversion(conversion)
        table = DPSGDTable(problem, 2000)
        low, high = np.array([problem.bounds(p) for p in problem.names]).T
        points = low + (high - low) * rng.random((40, len(problem.names)))
        out[f"DPSGDTable.ranking[{conversion}]"] = _floats(table.ranking(points))
    return out


GROUPS = (dpsgd_values, gaussian_values, svt_values, objective_perturbation_values, expost_values, proposetest_values,
          oracle_values)


def values(full: bool = False) -> dict:
    """Every group's values (the acquisition's table only with `full`: building it takes seconds)."""
    out = {}
    for group in GROUPS + ((table_values,) if full else ()):
        out.update(group(full))
    return json.loads(json.dumps(out))   # as stored: tuples become lists


# Numbers agree to this relative tolerance: the recorded values are bit for bit on the machine that recorded them,
# but numpy's vectorised exp/log round the last bit differently on other CPUs (measured: up to 4e-12 relative at HEAD
# 4e125e8 on a 2-core development machine, in dp_accounting's own conversion).
RELATIVE_TOLERANCE = 1e-9


def differences(before: dict, after: dict) -> list[str]:
    """The keys whose values differ (beyond RELATIVE_TOLERANCE per number, compared after a JSON round trip), or that
    one side lacks."""
    return [key for key in sorted(set(before) | set(after))
            if not _same(json.loads(json.dumps(before.get(key))), json.loads(json.dumps(after.get(key))))]


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and not (a == b or (math.isnan(a) and math.isnan(b))):
        return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= RELATIVE_TOLERANCE * max(abs(a), abs(b))
    return a == b or (isinstance(a, float) and isinstance(b, float))


def count(value) -> int:
    return sum(count(v) for v in value) if isinstance(value, list) else 1


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "record":
        with open(args[0], "w") as f:
            json.dump(values("--full" in args), f, indent=0)
    else:
        before, after = (json.load(open(path)) for path in args)
        differ = differences(before, after)
        print(f"{len(before)} keys, {count(list(before.values()))} values; {len(differ)} keys differ: {differ}")
