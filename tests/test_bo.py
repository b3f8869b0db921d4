"""DPareto engine: Pareto front, hypervolume, transforms, GP posterior, HVPoI, proposals."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import optimize
import pandas as pd
import pytest
from scipy import stats

from dptradeoff.bo import gp
from dptradeoff.bo.hvpoi import adaptive_reference, hvpoi
from dptradeoff.pareto import hypervolume_2d, nondominated_cells, pareto_front, pareto_mask
from dptradeoff.bo.propose import REFINEMENT_TOLERANCE, GPState, Settings, propose
from dptradeoff.bo.transforms import InputScaler, objectives_from_gp, objectives_to_gp
from dptradeoff.problems import PROBLEMS, Oracle, Param, Problem


def test_pareto_front_matches_brute_force():
    rng = np.random.default_rng(0)
    pts = rng.random((300, 2))
    dominated = [any(np.all(q <= p) and np.any(q < p) for q in pts) for p in pts]
    assert pareto_mask(pts).tolist() == [not d for d in dominated]
    front = pareto_front(pts)
    assert np.all(np.diff(front[:, 0]) > 0) and np.all(np.diff(front[:, 1]) < 0)


@pytest.mark.parametrize("seed", range(5))
def test_hypervolume_matches_moocore(seed):
    import moocore

    rng = np.random.default_rng(seed)
    pts = rng.random((50, 2)) * 12
    ref = np.array([10.0, 1.0]) * (1 + seed)
    inside = pts[(pts < ref).all(axis=1)]
    expected = moocore.hypervolume(inside, ref=ref) if len(inside) else 0.0
    assert hypervolume_2d(pts, ref) == pytest.approx(expected, rel=1e-12)


def test_cells_cover_exactly_the_non_dominated_region():
    front = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    ref = np.array([4.0, 4.0])
    lower, upper = nondominated_cells(front, ref)
    rng = np.random.default_rng(1)
    samples = np.column_stack([rng.uniform(-2, 5, 20000), rng.uniform(-2, 5, 20000)])
    in_cells = ((samples[:, None, :] >= lower[None]) & (samples[:, None, :] < upper[None])).all(axis=2)
    assert in_cells.sum(axis=1).max() <= 1  # disjoint
    dominated = (samples[:, None, :] >= front[None]).all(axis=2).any(axis=1)
    inside_ref = (samples < ref).all(axis=1)
    assert np.array_equal(in_cells.any(axis=1), ~dominated & inside_ref)


def test_hvpoi_on_a_hand_checkable_case():
    front = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    ref = np.array([4.0, 4.0])
    # Nearly certain mean (1.5, 1.5): PoI = 1 and the added area is by hand
    # [1.5,2]x[1.5,3] + [2,3]x[1.5,2] = 0.75 + 0.5 = 1.25.
    assert hvpoi(np.array([[1.5, 1.5]]), np.array([[1e-10, 1e-10]]), front, ref)[0] == pytest.approx(1.25)
    # A dominated mean adds nothing.
    assert hvpoi(np.array([[2.5, 2.5]]), np.array([[0.3, 0.3]]), front, ref)[0] == 0.0
    # Uncertain mean: dHV(mean) x PoI, both computed independently.
    mean, var = np.array([1.8, 1.7]), np.array([0.4, 0.9])
    dhv = hypervolume_2d(np.vstack([front, mean]), ref) - hypervolume_2d(front, ref)
    rng = np.random.default_rng(0)
    draws = mean + np.sqrt(var) * rng.standard_normal((400_000, 2))
    not_dominated = ~(draws[:, None, :] >= front[None]).all(axis=2).any(axis=1)
    poi_mc = np.mean(not_dominated & (draws < ref).all(axis=1))
    value = hvpoi(mean[None], var[None], front, ref)[0]
    assert value == pytest.approx(dhv * poi_mc, rel=0.01)


def test_adaptive_reference_is_gpflowopt_rule():
    front = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    assert adaptive_reference(front) == pytest.approx([3.0 + 2 * 2 / 3, 3.0 + 2 * 2 / 3])


def test_transforms_invert():
    eps = np.array([1e-3, 0.5, 3.0, 250.0])
    err = np.array([0.01, 0.2, 0.5, 0.93])
    back = objectives_from_gp(objectives_to_gp(eps, err))
    assert back == pytest.approx(np.stack([eps, err], axis=1), rel=1e-12)
    assert np.isfinite(objectives_to_gp(np.inf, 0.0)).all()  # infinite epsilon, perfect model: clipped
    problem = PROBLEMS["adult-logreg-sgd"]
    scaler = InputScaler(problem)
    pts = np.array([[1, 8, 5e-4, 0.1, 0.1], [64, 512, 5e-2, 16, 4], [7, 100, 0.003, 2.5, 1.1]])
    unit = scaler.to_unit(pts)
    assert unit.min() >= 0 and unit.max() <= 1
    assert scaler.from_unit(unit) == pytest.approx(pts, rel=1e-12)


def test_numpy_posterior_equals_gpflow_predictions():
    gpflow, _ = gp.backend()
    rng = np.random.default_rng(0)
    x = rng.random((30, 3))
    y = np.sin(4 * x[:, 0]) + x[:, 1] ** 2 + 0.05 * rng.standard_normal(30)
    post = gp.Fitter(3).fit(x, y, noiseless=False, restarts=2, rng=rng)
    kernel = gpflow.kernels.Matern52(lengthscales=post.lengthscales, variance=post.variance)
    model = gpflow.models.GPR((x, post.y[:, None]), kernel=kernel,
                              likelihood=gpflow.likelihoods.Gaussian(variance=post.noise, variance_lower_bound=1e-12))
    xs = rng.random((40, 3))
    mean, var = model.predict_f(xs)
    ours_mean, ours_var = post.predict(xs)
    assert ours_mean == pytest.approx(post.y_mean + post.y_std * mean.numpy()[:, 0], rel=1e-8, abs=1e-10)
    assert ours_var == pytest.approx(post.y_std**2 * var.numpy()[:, 0], rel=1e-6, abs=1e-10)
    # the fit is a real fit: the utility GP learned its noise, the privacy GP is near noiseless
    assert post.noise > 1e-6
    assert gp.Fitter(3).fit(x, y, noiseless=True, restarts=1, rng=rng).noise == pytest.approx(gp.NOISELESS_VARIANCE)


def test_a_fit_whose_every_kernel_matrix_fails_is_refitted_with_jitter(monkeypatch):
    # 256 rows of a batch round on the Laplace example (near-duplicate perturbations) on which one restart's
    # Cholesky fails at every step: the fit adds GPflow's jitter once and goes on from the default start (from the
    # failing warm start, L-BFGS-B reached a zero-variance kernel on an AMD EPYC: a constant mean); without it, the
    # round stopped
    saved = np.load(Path(__file__).parent / "gp_data" / "batch_round_not_positive_definite.npz")
    x, y, (*lengthscales, variance, noise) = saved["x"], saved["y"], saved["start"]   # the round before's fit starts it
    start = gp.Hyperparameters(tuple(lengthscales), variance, noise)
    post = gp.Fitter(3).fit(x, y, noiseless=False, restarts=1, rng=np.random.default_rng(0), start=start)
    assert post.fixed_noise is not None and np.all(post.fixed_noise >= gp.JITTER * 0.999)   # the jitter, as noise
    mean, _ = post.predict(x[:20])
    assert np.all(np.isfinite(mean)) and np.corrcoef(mean, y[:20])[0, 1] > 0.5
    # every start the failing one and no jitter: nothing is left to fit, and the fit says so
    monkeypatch.setattr(gp, "JITTER", 0.0)
    monkeypatch.setattr(gp.Fitter, "_initial", lambda self, restart, noiseless, rng, start_: start)
    with pytest.raises(RuntimeError, match="with jitter too"):
        gp.Fitter(3).fit(x, y, noiseless=False, restarts=1, rng=np.random.default_rng(0), start=start)


# A toy problem with a known front: epsilon grows with a, the error falls with a and is
# smallest at b = 0.3, so the front is {b = 0.3}; random points rarely land there.
class _NoOracle(Oracle):
    """The toy problem's oracles are computed by the test itself (toy_oracle)."""

    def epsilon(self, point, *, n, delta):
        raise AssertionError("not called")


TOY = Problem("toy", None, _NoOracle(), domain=(Param("a", 0.0, 1.0), Param("b", 0.0, 1.0)), delta=0.0)


def toy_oracle(points: pd.DataFrame) -> pd.DataFrame:
    a, b = points["a"].to_numpy(), points["b"].to_numpy()
    out = points.copy()
    out["epsilon"] = 10 ** (2 * a - 1)
    out["error"] = np.clip(0.05 + 0.9 * (1 - a) ** 2 * (1 + 12 * (b - 0.3) ** 2) / 2.2, 0, 0.99)
    return out


def _toy_hypervolume(evals):
    return hypervolume_2d(evals[["epsilon", "error"]].to_numpy(), [10.0, 1.0])


def test_bo_beats_random_sampling_on_a_toy_problem():
    settings = Settings(candidates=1000, gp_restarts=2)
    bo, rnd = [], []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        initial = toy_oracle(pd.DataFrame(rng.random((8, 2)), columns=["a", "b"]))
        evals = initial
        for _ in range(10):
            evals = pd.concat([evals, toy_oracle(propose(TOY, evals, 1, settings, rng).points[["a", "b"]])], ignore_index=True)
        bo.append(_toy_hypervolume(evals))
        extra = toy_oracle(pd.DataFrame(rng.random((10, 2)), columns=["a", "b"]))
        rnd.append(_toy_hypervolume(pd.concat([initial, extra])))
    assert np.mean(bo) > np.mean(rnd)
    assert sum(b > r for b, r in zip(bo, rnd)) >= 2


def test_same_inputs_same_proposals_and_a_batch_of_distinct_points():
    rng = np.random.default_rng(0)
    evals = toy_oracle(pd.DataFrame(rng.random((12, 2)), columns=["a", "b"]))
    settings = Settings(candidates=500, gp_restarts=2)
    a = propose(TOY, evals, 4, settings, np.random.default_rng(7)).points
    b = propose(TOY, evals, 4, settings, np.random.default_rng(7)).points
    timings = [c for c in a.columns if c.endswith("_seconds")]
    assert a.drop(columns=timings).equals(b.drop(columns=timings))
    pts = a[["a", "b"]].to_numpy()
    assert len({tuple(p) for p in pts}) == 4
    assert not any((np.abs(evals[["a", "b"]].to_numpy() - p).sum(1) < 1e-12).any() for p in pts)


def test_integer_hyperparameters_are_rounded_and_never_repeated():
    problem = PROBLEMS["svt"]
    rng = np.random.default_rng(0)
    points = pd.DataFrame({"bound": rng.integers(1, 31, 10), "b": np.exp(rng.uniform(np.log(0.01), np.log(100), 10))})
    points["epsilon"] = (1 + (2 * points["bound"]) ** (1 / 3)) * (1 + (2 * points["bound"]) ** (2 / 3)) / points["b"]
    points["error"] = stats.norm.cdf(np.log(points["b"])) * 0.9
    out = propose(problem, points, 3, Settings(candidates=300, gp_restarts=1), rng).points
    assert out["bound"].dtype.kind == "i" and out["bound"].between(1, 30).all()


def test_loss_and_gradient_equal_gpflows_training_loss():
    """The closed-form gradient in K replaces only TensorFlow's back-propagation through Cholesky."""
    gpflow, tf = gp.backend()
    rng = np.random.default_rng(2)
    x = rng.random((40, 3))
    y = np.sin(5 * x[:, 0]) + x[:, 2] + 0.1 * rng.standard_normal(40)
    fitter = gp.fitter(3)
    fitter.x.assign(x)
    fitter.y.assign(((y - y.mean()) / y.std())[:, None])
    fitter.fixed.assign(np.zeros(len(x)))   # the shared fitter keeps the last fit's per-point noise otherwise
    fitter._set(gp.Hyperparameters((0.3, 1.7, 0.9), 1.4, 0.05))
    with tf.GradientTape() as tape:
        reference = fitter.model.training_loss()
    reference_grad = np.concatenate([g.numpy().ravel() for g in tape.gradient(reference, fitter.variables)])
    theta = np.concatenate([v.numpy().ravel() for v in fitter.variables])
    ours, ours_grad = fitter._loss_and_grad(theta + 0.0, False)
    assert float(ours) == pytest.approx(float(reference), rel=1e-12)
    assert ours_grad.numpy() == pytest.approx(reference_grad, rel=1e-9, abs=1e-12)
    # noiseless: the same loss, the gradient without the likelihood variance's component
    _, noiseless_grad = fitter._loss_and_grad(theta[:-1] + 0.0, True)
    assert noiseless_grad.numpy() == pytest.approx(reference_grad[:-1], rel=1e-9, abs=1e-12)


def _chain_data(n):
    rng = np.random.default_rng(4)
    evals = toy_oracle(pd.DataFrame(rng.random((n, 2)), columns=["a", "b"]))
    evals["error"] += 0.01 * rng.standard_normal(n)
    return evals


def test_refinement_from_the_previous_round_reaches_the_full_fits_likelihood():
    """One L-BFGS-B run from round r-1's hyperparameters, at the refinement's looser tolerance, ends
    where ML-II with restarts does."""
    from dptradeoff.bo.transforms import InputScaler

    evals = _chain_data(41)
    scaler = InputScaler(TOY)
    x = scaler.to_unit(evals[["a", "b"]].to_numpy())
    y = objectives_to_gp(evals["epsilon"].to_numpy(), evals["error"].to_numpy())[:, 1]
    fitter = gp.fitter(2)

    def loss(post):
        fitter.x.assign(x)
        fitter.y.assign(post.y[:, None])
        fitter._set(post.hyperparameters)
        return float(fitter._loss_and_grad(np.concatenate([v.numpy().ravel() for v in fitter.variables]), False)[0])

    before = fitter.fit(x[:40], y[:40], noiseless=False, restarts=4, rng=np.random.default_rng(0))
    refined = fitter.fit(x, y, noiseless=False, restarts=1, rng=np.random.default_rng(1), start=before.hyperparameters,
                         tolerance=REFINEMENT_TOLERANCE)
    full = fitter.fit(x, y, noiseless=False, restarts=4, rng=np.random.default_rng(1))
    assert loss(refined) <= loss(full) + 1e-4     # nats: likelihoods equal to a ratio of 1.0001
    assert refined.hyperparameters != before.hyperparameters    # it did move with the new point


def test_a_fit_keeps_the_best_hyperparameters_it_evaluated(monkeypatch):
    """Whatever point L-BFGS-B stops at (after a failed line search it may be worse than its start),
    the fit returns the best hyperparameters evaluated: a refinement never loses the warm start."""
    evals = _chain_data(20)
    from dptradeoff.bo.transforms import InputScaler

    x = InputScaler(TOY).to_unit(evals[["a", "b"]].to_numpy())
    y = objectives_to_gp(evals["epsilon"].to_numpy(), evals["error"].to_numpy())[:, 1]
    fitter = gp.fitter(2)
    start = fitter.fit(x, y, noiseless=False, restarts=3, rng=np.random.default_rng(0)).hyperparameters

    def stops_at_a_worse_point(objective, theta0, **options):
        objective(theta0)
        worse = theta0 + 1.5
        objective(worse)
        return optimize.OptimizeResult(x=worse, fun=objective(worse)[0], success=False)

    monkeypatch.setattr(gp.optimize, "minimize", stops_at_a_worse_point)
    refined = fitter.fit(x, y, noiseless=False, restarts=1, rng=np.random.default_rng(1), start=start)
    flat = lambda h: [*h.lengthscales, h.variance, h.noise]
    assert flat(refined.hyperparameters) == pytest.approx(flat(start), rel=1e-9)


def test_refit_schedule_and_state_drive_the_fit():
    """Full restarts every refit_every-th round, one refinement from the given state between; the
    state is what the round starts from (another state gives another fit), deterministically."""
    evals = _chain_data(20)
    settings = Settings(candidates=300, gp_restarts=3, refit_every=4)
    state = propose(TOY, evals.iloc[:19], 1, settings, np.random.default_rng(0)).gp_state
    assert [settings.full_refit(r) for r in range(6)] == [True, False, False, False, True, False]
    fitter = gp.fitter(2)
    calls = []
    original = fitter._fit
    fitter._fit = lambda *args: calls.append(args[3]) or original(*args)
    try:
        a = propose(TOY, evals, 1, settings, np.random.default_rng(1), state, round_index=5)
        b = propose(TOY, evals, 1, settings, np.random.default_rng(1), state, round_index=5)
        full = propose(TOY, evals, 1, settings, np.random.default_rng(1), state, round_index=8)
        moved = GPState(gp.Hyperparameters((3.0, 3.0), 0.2, 0.3), gp.Hyperparameters((3.0, 3.0), 0.2, 0.3))
        other = propose(TOY, evals, 1, settings, np.random.default_rng(1), moved, round_index=5)
    finally:
        del fitter._fit
    assert calls == [1, 1, 1, 1, 3, 3, 1, 1]     # restarts per GP fit: privacy then utility, per call
    timings = [c for c in a.points.columns if c.endswith("_seconds")]
    assert a.gp_state == b.gp_state and a.points.drop(columns=timings).equals(b.points.drop(columns=timings))
    assert other.gp_state != a.gp_state
    assert GPState.from_dict(full.gp_state.as_dict()) == full.gp_state


@pytest.mark.parametrize("reference", ["fixed", "adaptive"])
def test_acquisition_skipping_dominated_means_equals_full_hvpoi(reference):
    """The search computes variances only where dHV(mean) > 0; the values must be HVPoI's exactly,
    with the configured reference point."""
    from dptradeoff.bo.propose import FIXED_REFERENCE, acquisition_function, fit_surrogates

    evals = _chain_data(25)
    settings = Settings(candidates=100, gp_restarts=1, reference=reference)
    surrogates = fit_surrogates(TOY, evals, settings, np.random.default_rng(0))
    observed = surrogates.scaler.to_unit(evals[["a", "b"]].to_numpy())
    candidates = np.random.default_rng(1).random((3000, 2))
    values = acquisition_function(surrogates, observed, settings)(candidates)
    mean, var = surrogates.predict(candidates)
    front = pareto_front(surrogates.predict(observed)[0])
    expected = hvpoi(mean, var, front, FIXED_REFERENCE if reference == "fixed" else adaptive_reference(front))
    # equal up to rounding: a multi-threaded BLAS solves a subset of columns with other roundings
    assert np.array_equal(values > 0, expected > 0)
    np.testing.assert_allclose(values, expected, rtol=1e-9, atol=0)
    assert 0 < (values > 0).sum() < len(values)     # both kinds of candidate occur


def test_initial_max_inputs_are_the_originals_scaling_with_uniform_linear_candidates():
    """`initial-max`: each hyperparameter divided by its maximum over the initial points; the box is the
    domain so scaled, so a uniform draw in it is uniform in the linear domain (log-unit-cube: log-uniform)."""
    from dptradeoff.baselines.random_search import sample
    from dptradeoff.bo.transforms import input_scaler

    problem = PROBLEMS["adult-logreg-sgd"]
    initial = sample(problem, 16, np.random.default_rng(0)).to_numpy(float)
    scaler = input_scaler(problem, "initial-max", initial)
    assert np.allclose(scaler.to_unit(initial).max(axis=0), 1.0)
    lows, highs = np.array([p.low for p in problem.domain]), np.array([p.high for p in problem.domain])
    inside = np.clip(initial, lows, highs)   # random points may lie outside Table 1's domain (Table 4's accept ranges)
    assert np.allclose(scaler.from_unit(scaler.to_unit(inside)), inside, rtol=1e-13)
    assert np.allclose(scaler.lower * initial.max(axis=0), lows) and np.allclose(scaler.upper * initial.max(axis=0), highs)
    u = np.random.default_rng(1).random((20000, 5))
    noise = problem.names.index("noise")
    linear = scaler.from_unit(scaler.lower + u * (scaler.upper - scaler.lower))[:, noise]
    logged = input_scaler(problem, "log-unit-cube", initial).from_unit(u)[:, noise]
    assert np.median(linear) == pytest.approx((0.1 + 16) / 2, rel=0.03)       # uniform on [0.1, 16]
    assert np.median(logged) == pytest.approx(np.sqrt(0.1 * 16), rel=0.05)     # log-uniform
    with pytest.raises(ValueError, match="inputs"):
        input_scaler(problem, "unit", initial)


def test_a_chain_with_initial_max_inputs_scales_by_its_initial_points_and_proposes_inside_the_domain():
    from dptradeoff.bo.propose import fit_surrogates

    evals = _chain_data(24)
    evals.loc[20, "a"] = 1.0                    # a later point beyond the initial points' maximum
    settings = Settings(candidates=300, gp_restarts=1, inputs="initial-max")
    surrogates = fit_surrogates(TOY, evals, settings, np.random.default_rng(0), initial=16)
    assert np.array_equal(surrogates.scaler.factor, evals[["a", "b"]].iloc[:16].max().to_numpy())
    points = propose(TOY, evals, 3, settings, np.random.default_rng(0), initial=16).points
    assert points[["a", "b"]].to_numpy().min() >= 0.0 and points[["a", "b"]].to_numpy().max() <= 1.0
    assert len(points.drop_duplicates(subset=["a", "b"])) == 3


def test_a_refinement_without_a_finite_likelihood_falls_back_to_a_full_fit(monkeypatch):
    """A warm start can sit where the new data make the likelihood non-finite everywhere L-BFGS-B goes
    (seen: a utility GP at its noise floor, then a point repeating another's relevant inputs): the
    round refits that GP with restarts instead of failing the chain."""
    from dptradeoff.bo.propose import fit_surrogates

    evals = _chain_data(20)
    settings = Settings(candidates=100, gp_restarts=2, refit_every=8)
    state = propose(TOY, evals.iloc[:19], 1, settings, np.random.default_rng(0)).gp_state
    fitter = gp.fitter(2)
    real_fit = type(fitter).fit
    calls = []

    def refinement_fails(self, x, y, noiseless, restarts, rng, start=None, tolerance=None, fixed_noise=None):
        calls.append((noiseless, restarts))
        if restarts == 1 and not noiseless:
            raise RuntimeError("every GP restart failed")
        return real_fit(self, x, y, noiseless, restarts, rng, start, tolerance, fixed_noise)

    monkeypatch.setattr(type(fitter), "fit", refinement_fails)
    surrogates = fit_surrogates(TOY, evals, settings, np.random.default_rng(1), state, round_index=3)
    assert calls == [(True, 1), (False, 1), (False, 2)]
    assert np.isfinite(surrogates.utility.hyperparameters.noise)


def test_the_blas_library_scan_runs_once_per_process_under_the_import_lock(monkeypatch):
    """Two chains' first rounds started together as threads of one Snakemake process once hung for
    good: one thread's threadpoolctl scan (dl_iterate_phdr, loader lock held, waiting for the GIL)
    against the other's TensorFlow import (GIL held, dlopen waiting for the loader lock). The scan
    must hold gp.IMPORT_LOCK (which TensorFlow's import holds) and run once per process."""
    from dptradeoff.bo import chain_round

    scans = []
    monkeypatch.setattr(chain_round.threadpoolctl, "threadpool_limits",
                        lambda limits: scans.append(gp.IMPORT_LOCK._is_owned()))
    monkeypatch.setattr(chain_round, "_blas_limited", False)
    for _ in range(3):
        chain_round.limit_blas_threads()
    assert scans == [True]


@pytest.mark.slow   # two chains started in one fresh process, TensorFlow and torch imported: about 10 s each
@pytest.mark.parametrize("delay", [0.5, 1.0])
def test_two_chains_first_rounds_in_one_process_do_not_deadlock(tmp_path, delay):
    """The same hang end to end: two first rounds, the second `delay` s after the first, in a fresh
    process (it hung at 2 of 5 delays before the fix; it is a race, so this can pass by luck, the
    test above cannot)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("two_first_rounds.py")
    done = subprocess.run([sys.executable, str(script), str(tmp_path), str(delay)], capture_output=True, text=True,
                          timeout=90)
    assert done.returncode == 0 and "finished" in done.stdout, done.stdout + done.stderr[-2000:]
    assert (tmp_path / "a_0.parquet").exists() and (tmp_path / "b_0.parquet").exists()


def test_a_posterior_on_a_design_piled_at_one_corner_factorises_with_recorded_jitter():
    """A chain that piled its proposals onto one corner (near-duplicate inputs), with the long
    lengthscales, large signal variance and tiny learned noise such data give, has a kernel matrix
    numpy cannot factorise: the posterior adds the smallest jitter that works and says how much."""
    rng = np.random.default_rng(0)
    x = np.vstack([rng.random((20, 4)), np.tile([0.0, 0.0, 1.0, 1.0], (40, 1)) + 1e-7 * rng.random((40, 4))])
    y = rng.normal(size=len(x))
    lengthscales, variance, noise = np.full(4, 10.0), 1e6, 1e-9
    k = gp.matern52(x, x, lengthscales, variance) + noise * np.eye(len(x))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(k)      # the design fails as it is
    posterior = gp.Posterior(x, y, lengthscales, variance, noise, 0.0, 1.0)
    assert 0.0 < posterior.jitter <= 1e-6 * variance
    mean, var = posterior.predict(x[:5])
    assert np.all(np.isfinite(mean)) and np.all(var > 0)
    assert np.allclose(mean, y[:5], atol=0.05)   # the distinct points are still (nearly) interpolated
    # a well-conditioned matrix is factorised as it is
    assert gp.Posterior(x[:20], y[:20], np.full(4, 0.5), 1.0, 1e-2, 0.0, 1.0).jitter == 0.0
