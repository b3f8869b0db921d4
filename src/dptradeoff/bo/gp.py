"""GP surrogates: GPflow GPR, Matérn 5/2 with ARD lengthscales, fitted by ML-II with restarts.

Hyperparameters are fitted by GPflow (type-II maximum likelihood, scipy L-BFGS-B, several
starts, best marginal likelihood kept). As in GPflowOpt, which the original DPareto code used,
the first start is the model's current state (the previous round's hyperparameters, when the
caller passes them) and the others are random. A round may also refine the previous round's
hyperparameters only (one start): `propose` decides which, from `Settings.refit_every`. A fit
returns the best hyperparameters any start evaluated, not where L-BFGS-B stopped: after a failed
line search (common on the near-noiseless privacy GP, whose likelihood is numerically flat) that
point can be worse than the start.

The loss is GPflow's: its Matérn kernel, likelihood and parameter transforms; only the gradient
of the log-determinant and quadratic form with respect to the kernel matrix K is written in
closed form, 0.5 (K^-1 - a a^T) with a = K^-1 y, instead of TensorFlow back-propagating through
the Cholesky factorisation (4x the cost of the loss itself at 256 points). A test checks value
and gradient against GPflow's `training_loss` to 1e-9.

The acquisition then needs thousands of predictions and, for batch proposals, conditioning on
fantasised points: TensorFlow's eager overhead is ~30 ms per call, so the fitted posterior is
carried into numpy (`Posterior`), the same formulas GPflow uses (a test checks it against
GPflow's predict_f to 1e-8).

Outputs are standardised before fitting. The privacy GP is (near) noiseless: its likelihood
variance is fixed at 1e-6 of the standardised scale (privacy is a deterministic function);
the utility GP learns its noise variance.

TensorFlow is imported once per process (`backend`), with its C++ start-up messages about
absent CUDA libraries filtered out of stderr, and runs on one thread (a proposal is a
`threads: 1` job); one `Fitter` per input dimension is built and traced once per process
(`fitter`) and shared, under a lock, by the proposal jobs that Snakemake runs as threads.
"""
from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, optimize
from scipy.linalg import blas

from ..quiet import native_stderr_filtered

log = logging.getLogger(__name__)

NOISELESS_VARIANCE = 1e-6
SQRT5 = np.sqrt(5.0)
MATERN_BLOCK = 2**17      # kernel entries per block: 1 MB, a few such arrays fit in a core's L2

# What TensorFlow writes to stderr from C++ while it is imported on a machine without CUDA.
TF_START_UP_NOISE = ("cuda", "cuDNN", "cuBLAS", "cuFFT", "absl::InitializeLog", "oneDNN custom operations",
                     "cpu_feature_guard", "rebuild TensorFlow with the appropriate compiler flags", "TF-TRT")

# Held while this process loads native libraries (TensorFlow's import) or scans them (threadpoolctl):
# see dptradeoff.bo.chain_round.limit_blas_threads.
IMPORT_LOCK = threading.RLock()


_configured = False


def backend():
    """GPflow and TensorFlow, imported once per process (seconds), quietly, and made to compute the same bits
    whatever the machine's load: one intra-op and one inter-op thread (set before the runtime starts), op
    determinism on, and oneDNN's custom kernels off (TensorFlow warns that they change results by the order
    of their floating-point sums). A chain's proposals then replay bit for bit (tests/test_gp.py)."""
    global _configured
    with IMPORT_LOCK:
        import os
        import sys

        if not _configured:
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
            if "tensorflow" not in sys.modules:
                os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
            else:
                log.warning("TensorFlow was imported before dptradeoff configured it: its thread pools and oneDNN "
                            "kernels may make GP fits differ in the last bits under load, and chains may not replay")
            with native_stderr_filtered(TF_START_UP_NOISE):
                import tensorflow as tf

                tf.get_logger().setLevel("ERROR")
                try:   # only possible before TensorFlow's runtime starts
                    tf.config.threading.set_intra_op_parallelism_threads(1)
                    tf.config.threading.set_inter_op_parallelism_threads(1)
                except RuntimeError:
                    pass
                tf.config.experimental.enable_op_determinism()
                import gpflow  # noqa: F401
            _configured = True
        import gpflow
        import tensorflow as tf
    return gpflow, tf


JITTER = 1e-6   # standardised units, added where no fit's kernel matrix is positive definite (GPflow's default)


@dataclass(frozen=True)
class Hyperparameters:
    """A GP's kernel and likelihood hyperparameters (on the standardised output scale)."""
    lengthscales: tuple[float, ...]
    variance: float
    noise: float

    def as_dict(self) -> dict:
        return {"lengthscales": list(self.lengthscales), "variance": self.variance, "noise": self.noise}

    @classmethod
    def from_dict(cls, values: dict) -> "Hyperparameters":
        return cls(tuple(float(v) for v in values["lengthscales"]), float(values["variance"]), float(values["noise"]))


def matern52(a: np.ndarray, b: np.ndarray, lengthscales: np.ndarray, variance: float) -> np.ndarray:
    """GPflow's Matern52 in numpy, squared distances as GPflow computes them (|a|^2 + |b|^2 - 2 a.b,
    clipped at 0). The acquisition's main cost (5,000 candidates x 256 points per GP): computed in
    blocks of rows that stay in cache (3x faster than whole-array passes at that size)."""
    a, b = np.atleast_2d(a) * (SQRT5 / lengthscales), b * (SQRT5 / lengthscales)
    # 5 d^2 in one product of augmented matrices: [a, |a|^2, 1] . [-2 b, 1, |b|^2]
    a = np.hstack([a, np.einsum("ij,ij->i", a, a)[:, None], np.ones((len(a), 1))])
    b = np.hstack([-2.0 * b, np.ones((len(b), 1)), np.einsum("ij,ij->i", b, b)[:, None]])
    out = np.empty((len(a), len(b)))
    rows = max(1, MATERN_BLOCK // len(b))
    for start in range(0, len(a), rows):
        s = blas.dgemm(1.0, a[start:start + rows], b, trans_b=True)   # scipy's BLAS: numpy's may be a generic build
        np.maximum(s, 5e-36, out=s)
        r = np.sqrt(s)                          # sqrt(5) d
        s *= 1.0 / 3.0
        s += r
        s += 1.0                                # 1 + sqrt(5) d + 5 d^2 / 3
        np.negative(r, out=r)
        s *= np.exp(r, out=r)
        s *= variance
        out[start:start + rows] = s
    return out


# Jitter for a kernel matrix that is not numerically positive definite (near-duplicate inputs, long
# lengthscales, a tiny learned noise): GPyTorch's psd_safe_cholesky schedule for float64, from 1e-8 of
# the mean diagonal, x10 per try; GPflow adds a fixed 1e-6. Each try costs one factorisation.
JITTER_START, JITTER_TRIES = 1e-8, 8


def robust_cholesky(k: np.ndarray) -> tuple[np.ndarray, float]:
    """The lower Cholesky factor of k + jitter I and the jitter used: 0 when k factorises as it is,
    else the smallest of mean(diag k) * 1e-8, 1e-7, ... that makes it factorise."""
    try:
        return np.linalg.cholesky(k), 0.0
    except np.linalg.LinAlgError:
        pass
    scale = float(np.mean(np.diag(k))) or 1.0
    for attempt in range(JITTER_TRIES):
        jitter = scale * JITTER_START * 10.0**attempt
        try:
            chol = np.linalg.cholesky(k + jitter * np.eye(len(k)))
        except np.linalg.LinAlgError:
            continue
        log.warning("kernel matrix of %d points not positive definite; factorised with jitter %.3g (%.0e of its "
                    "mean diagonal)", len(k), jitter, jitter / scale)
        return chol, jitter
    raise np.linalg.LinAlgError(f"the kernel matrix of {len(k)} points is not positive definite even with jitter "
                                f"{jitter:.3g}")


@dataclass
class Posterior:
    """A fitted GP's posterior in numpy (standardised outputs, zero prior mean)."""
    x: np.ndarray
    y: np.ndarray              # standardised targets
    lengthscales: np.ndarray
    variance: float
    noise: float
    y_mean: float
    y_std: float
    # per-point observation noise on the standardised scale, besides `noise` (None: none; the
    # replications' standard errors with `dpareto.utility_noise: replications`)
    fixed_noise: np.ndarray | None = None
    jitter: float = field(init=False, default=0.0)   # added to the diagonal so that it factorised (robust_cholesky)

    def __post_init__(self):
        k = matern52(self.x, self.x, self.lengthscales, self.variance) + self.noise * np.eye(len(self.x))
        if self.fixed_noise is not None:
            k[np.diag_indices_from(k)] += self.fixed_noise
        self._chol, self.jitter = robust_cholesky(k)
        self._alpha = linalg.cho_solve((self._chol, True), self.y)

    @property
    def hyperparameters(self) -> Hyperparameters:
        return Hyperparameters(tuple(float(v) for v in self.lengthscales), float(self.variance), float(self.noise))

    def predict(self, xnew: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the latent function at `xnew`, in the original output units."""
        ks = self.cross_kernel(xnew)
        return self.mean_from(ks), self.variance_from(ks)

    def cross_kernel(self, xnew: np.ndarray) -> np.ndarray:
        """k(xnew, x): what the mean and the variance at xnew are computed from (the acquisition
        computes the variance, a triangular solve of n^2 per point, only where it needs it)."""
        return matern52(np.atleast_2d(xnew), self.x, self.lengthscales, self.variance)

    def mean_from(self, ks: np.ndarray) -> np.ndarray:
        return self.y_mean + self.y_std * (ks @ self._alpha)

    def variance_from(self, ks: np.ndarray) -> np.ndarray:
        v = linalg.solve_triangular(self._chol, ks.T, lower=True, check_finite=False)
        return self.y_std**2 * np.maximum(self.variance - np.sum(v * v, axis=0), 1e-12)

    def condition(self, xnew: np.ndarray, ynew: np.ndarray) -> "Posterior":
        """The posterior with extra (fantasised) observations, hyperparameters unchanged."""
        ys = (np.asarray(ynew, dtype=float) - self.y_mean) / self.y_std
        fixed = None if self.fixed_noise is None else np.concatenate([self.fixed_noise, np.zeros(len(ys))])
        return Posterior(np.vstack([self.x, xnew]), np.concatenate([self.y, ys]), self.lengthscales, self.variance,
                         self.noise, self.y_mean, self.y_std, fixed)


_fitters: dict[int, "Fitter"] = {}


def fitter(d: int) -> "Fitter":
    """The process's Fitter for d-dimensional inputs (built and traced on first use)."""
    with IMPORT_LOCK:
        if d not in _fitters:
            _fitters[d] = Fitter(d)
        return _fitters[d]


class Fitter:
    """ML-II fitting of Matérn 5/2 ARD GPs with GPflow for inputs of dimension d.

    One GPR model whose data are shape-less tf.Variables serves every fit of the process, so the
    loss-and-gradient graph is traced once (~1.5 s) instead of once per GP and start. `fit` holds
    a lock: proposal jobs running as threads of one Snakemake process share the model in turn.
    """

    def __init__(self, d: int):
        gpflow, tf = backend()
        self._lock = threading.Lock()
        self.d = d
        self.x = tf.Variable(np.zeros((1, d)), shape=tf.TensorShape([None, d]), dtype=tf.float64)
        self.y = tf.Variable(np.zeros((1, 1)), shape=tf.TensorShape([None, 1]), dtype=tf.float64)
        self.fixed = tf.Variable(np.zeros(1), shape=tf.TensorShape([None]), dtype=tf.float64)   # per-point noise
        kernel = gpflow.kernels.Matern52(lengthscales=np.full(d, 0.5), variance=1.0)
        likelihood = gpflow.likelihoods.Gaussian(variance=0.1, variance_lower_bound=1e-9)
        self.model = gpflow.models.GPR((self.x, self.y), kernel=kernel, likelihood=likelihood)
        self.variables = list(self.model.kernel.trainable_variables) + list(self.model.likelihood.trainable_variables)
        noise_var = self.model.likelihood.variance.unconstrained_variable
        self._is_noise = [v is noise_var for v in self.variables]
        model, variables, x, y, fixed = self.model, self.variables, self.x, self.y, self.fixed

        @tf.custom_gradient
        def neg_log_marginal(k, y):
            """-log N(y | 0, K) with its gradient in K written out (no back-propagation through Cholesky)."""
            chol = tf.linalg.cholesky(k)
            alpha = tf.linalg.cholesky_solve(chol, y)
            n = tf.cast(tf.shape(y)[0], tf.float64)
            value = (0.5 * tf.reduce_sum(y * alpha) + tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)))
                     + 0.5 * n * math.log(2 * math.pi))

            def grad(upstream):
                k_inv = tf.linalg.cholesky_solve(chol, tf.eye(tf.shape(k)[0], dtype=tf.float64))
                return upstream * 0.5 * (k_inv - tf.matmul(alpha, alpha, transpose_b=True)), None   # y is data

            return value, grad

        @tf.function
        def loss_and_grad(theta, noiseless):
            """Set the free (unconstrained) variables from the flat vector theta, then the loss and
            its gradient in them, flat: one graph call per L-BFGS-B evaluation (eager assignments
            and conversions cost another 1.5 ms per evaluation)."""
            free = self._free(noiseless)
            self._assign(free, theta)
            with tf.GradientTape() as tape:
                k = (model.kernel(x) + model.likelihood.variance * tf.eye(tf.shape(x)[0], dtype=tf.float64)
                     + tf.linalg.diag(fixed))
                value = neg_log_marginal(k, tf.convert_to_tensor(y)) - model.log_prior_density()
            return value, tf.concat([tf.reshape(g, [-1]) for g in tape.gradient(value, free)], axis=0)

        self._loss_and_grad = loss_and_grad

    def _free(self, noiseless: bool) -> list:
        """The variables ML-II fits: all but the likelihood variance when the GP is noiseless."""
        return [v for v, noise in zip(self.variables, self._is_noise) if not (noiseless and noise)]

    def fit(self, x: np.ndarray, y: np.ndarray, noiseless: bool, restarts: int, rng: np.random.Generator,
            start: Hyperparameters | None = None, tolerance: float | None = None,
            fixed_noise: np.ndarray | None = None) -> Posterior:
        """The best of `restarts` L-BFGS-B fits of the negative log marginal likelihood: the first
        from `start` (or GPflow-style defaults), the others from random hyperparameters. Each stops
        when an iteration lowers the loss by less than `tolerance` relative to it (None: scipy's
        default, 2.2e-9, as GPflow's Scipy optimiser). `fixed_noise`: each observation's own noise
        variance (output units), added to the learned noise, which is then a floor above it."""
        with self._lock:
            return self._fit(np.asarray(x, dtype=float), np.asarray(y, dtype=float), noiseless, restarts, rng, start,
                             tolerance, fixed_noise)

    def _fit(self, x, y, noiseless, restarts, rng, start, tolerance, fixed_noise=None, jittered=False):
        y_mean, y_std = float(y.mean()), float(y.std()) or 1.0
        ys = (y - y_mean) / y_std
        fixed = None if fixed_noise is None else np.asarray(fixed_noise, dtype=float) / y_std**2
        self.x.assign(x)
        self.y.assign(ys[:, None])
        self.fixed.assign(np.zeros(len(x)) if fixed is None else fixed)
        free = self._free(noiseless)

        best, best_loss = None, np.inf

        def objective(theta):
            nonlocal best, best_loss
            value, gradient = self._loss_and_grad(theta, noiseless)
            value = float(value)
            if value < best_loss:   # the best point evaluated: never worse than a start, whatever L-BFGS-B reports
                best, best_loss = theta.copy(), value
            return value, gradient.numpy()

        for restart in range(max(1, restarts)):
            self._set(self._initial(restart, noiseless, rng, start))
            theta0 = np.concatenate([v.numpy().ravel() for v in free]).astype(float)
            try:
                options = {"maxiter": 150} if tolerance is None else {"maxiter": 150, "ftol": tolerance}
                optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B", options=options)
            except Exception as exc:  # a restart may hit a non-PSD kernel; the others still count
                log.warning("GP restart %d failed: %s", restart, exc)
        if best is None and not jittered:
            # a noiseless GP on near-duplicate points (a batch round's perturbations) can leave no kernel matrix
            # positive definite: refit once with GPflow's default jitter on the diagonal, the first start the
            # default hyperparameters, not the warm start every step from which failed (from it, L-BFGS-B can run
            # into a zero-variance kernel: a constant mean, seen on an AMD EPYC with the saved round of tests/test_bo.py)
            log.warning("every GP restart failed: refitting with jitter %g on the kernel's diagonal", JITTER)
            jitter = np.full(len(x), JITTER * y_std**2)
            return self._fit(x, y, noiseless, restarts, rng, None, tolerance,
                             jitter if fixed_noise is None else np.asarray(fixed_noise, dtype=float) + jitter, True)
        if best is None:
            raise RuntimeError("every GP restart failed, with jitter too")
        self._assign(free, best)
        fitted = self._get()
        return Posterior(x, ys, np.array(fitted.lengthscales), fitted.variance, fitted.noise, y_mean, y_std, fixed)

    @staticmethod
    def _assign(free: list, theta) -> None:
        """Set the free (unconstrained) variables from the flat vector theta (in the graph or eagerly)."""
        _, tf = backend()
        offset = 0
        for v in free:
            size = int(np.prod(v.shape))
            v.assign(tf.reshape(theta[offset:offset + size], v.shape))
            offset += size

    def _initial(self, restart: int, noiseless: bool, rng: np.random.Generator,
                 start: Hyperparameters | None) -> Hyperparameters:
        if restart == 0:
            first = start or Hyperparameters((0.5,) * self.d, 1.0, 0.1)
            return Hyperparameters(first.lengthscales, first.variance, NOISELESS_VARIANCE if noiseless else first.noise)
        return Hyperparameters(tuple(np.exp(rng.uniform(np.log(0.05), np.log(3.0), self.d))),
                               float(np.exp(rng.uniform(-1.0, 1.0))),
                               NOISELESS_VARIANCE if noiseless else float(np.exp(rng.uniform(np.log(1e-3), np.log(0.5)))))

    def _set(self, h: Hyperparameters) -> None:
        self.model.kernel.lengthscales.assign(np.array(h.lengthscales))
        self.model.kernel.variance.assign(h.variance)
        self.model.likelihood.variance.assign(max(h.noise, 1.0000001e-9))

    def _get(self) -> Hyperparameters:
        return Hyperparameters(tuple(float(v) for v in self.model.kernel.lengthscales.numpy()),
                               float(self.model.kernel.variance.numpy()), float(self.model.likelihood.variance.numpy()))
