"""GP surrogates: GPflow GPR, Matérn 5/2 with ARD lengthscales, fitted by ML-II with restarts.

Hyperparameters are fitted by GPflow (type-II maximum likelihood, scipy L-BFGS-B, several
random restarts, best marginal likelihood kept). The acquisition then needs thousands of
predictions and, for batch proposals, conditioning on fantasised points: TensorFlow's eager
overhead is ~30 ms per call, so the fitted posterior is carried into numpy (`Posterior`), the
same formulas GPflow uses (a test checks it against GPflow's predict_f to 1e-8).

Outputs are standardised before fitting. The privacy GP is (near) noiseless: its likelihood
variance is fixed at 1e-6 of the standardised scale (privacy is a deterministic function);
the utility GP learns its noise variance.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
from scipy import optimize

log = logging.getLogger(__name__)

NOISELESS_VARIANCE = 1e-6
SQRT5 = np.sqrt(5.0)


def backend():
    """Import GPflow and TensorFlow (once per process; several seconds)."""
    return _gpflow()


def _gpflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import gpflow
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    return gpflow, tf


def matern52(a: np.ndarray, b: np.ndarray, lengthscales: np.ndarray, variance: float) -> np.ndarray:
    diff = (a[:, None, :] - b[None, :, :]) / lengthscales
    r = np.sqrt(np.maximum(np.sum(diff * diff, axis=-1), 1e-36))
    return variance * (1.0 + SQRT5 * r + 5.0 / 3.0 * r * r) * np.exp(-SQRT5 * r)


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

    def __post_init__(self):
        k = matern52(self.x, self.x, self.lengthscales, self.variance) + self.noise * np.eye(len(self.x))
        self._chol = np.linalg.cholesky(k)
        self._alpha = np.linalg.solve(self._chol.T, np.linalg.solve(self._chol, self.y))

    def predict(self, xnew: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the latent function at `xnew`, in the original output units."""
        ks = matern52(np.atleast_2d(xnew), self.x, self.lengthscales, self.variance)
        mean = ks @ self._alpha
        v = np.linalg.solve(self._chol, ks.T)
        var = np.maximum(self.variance - np.sum(v * v, axis=0), 1e-12)
        return self.y_mean + self.y_std * mean, self.y_std**2 * var

    def condition(self, xnew: np.ndarray, ynew: np.ndarray) -> "Posterior":
        """The posterior with extra (fantasised) observations, hyperparameters unchanged."""
        ys = (np.asarray(ynew, dtype=float) - self.y_mean) / self.y_std
        return Posterior(np.vstack([self.x, xnew]), np.concatenate([self.y, ys]), self.lengthscales, self.variance,
                         self.noise, self.y_mean, self.y_std)


class Fitter:
    """ML-II fitting of Matérn 5/2 ARD GPs with GPflow for inputs of dimension d.

    One GPR model whose data are shape-less tf.Variables serves every fit of the process, so the
    loss-and-gradient graph is traced once (~1.5 s) instead of once per GP and restart.
    """

    def __init__(self, d: int):
        gpflow, tf = _gpflow()
        self._tf = tf
        self.d = d
        self.x = tf.Variable(np.zeros((1, d)), shape=tf.TensorShape([None, d]), dtype=tf.float64)
        self.y = tf.Variable(np.zeros((1, 1)), shape=tf.TensorShape([None, 1]), dtype=tf.float64)
        kernel = gpflow.kernels.Matern52(lengthscales=np.full(d, 0.5), variance=1.0)
        likelihood = gpflow.likelihoods.Gaussian(variance=0.1, variance_lower_bound=1e-9)
        self.model = gpflow.models.GPR((self.x, self.y), kernel=kernel, likelihood=likelihood)
        self.variables = list(self.model.kernel.trainable_variables) + list(self.model.likelihood.trainable_variables)
        noise_var = self.model.likelihood.variance.unconstrained_variable
        self._is_noise = [v is noise_var for v in self.variables]
        model, variables = self.model, self.variables

        @tf.function
        def loss_and_grad():
            with tf.GradientTape() as tape:
                value = model.training_loss()
            return value, tape.gradient(value, variables)

        self._loss_and_grad = loss_and_grad

    def fit(self, x: np.ndarray, y: np.ndarray, noiseless: bool, restarts: int, rng: np.random.Generator) -> Posterior:
        """The best of `restarts` L-BFGS-B fits of the negative log marginal likelihood."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        y_mean, y_std = float(y.mean()), float(y.std()) or 1.0
        ys = (y - y_mean) / y_std
        self.x.assign(x)
        self.y.assign(ys[:, None])
        model = self.model
        free = [v for v, noise in zip(self.variables, self._is_noise) if not (noiseless and noise)]
        sizes = [int(np.prod(v.shape)) for v in free]
        keep = [i for i, v in enumerate(self.variables) if any(v is f for f in free)]

        def set_flat(theta):
            for v, part in zip(free, np.split(theta, np.cumsum(sizes)[:-1])):
                v.assign(part.reshape(v.shape))

        def objective(theta):
            set_flat(theta)
            value, grads = self._loss_and_grad()
            return float(value.numpy()), np.concatenate([grads[i].numpy().ravel() for i in keep]).astype(float)

        best, best_loss = None, np.inf
        for restart in range(max(1, restarts)):
            first = restart == 0
            model.kernel.lengthscales.assign(np.full(self.d, 0.5) if first else np.exp(rng.uniform(np.log(0.05), np.log(3.0), self.d)))
            model.kernel.variance.assign(1.0 if first else float(np.exp(rng.uniform(-1.0, 1.0))))
            model.likelihood.variance.assign(NOISELESS_VARIANCE if noiseless else
                                             (0.1 if first else float(np.exp(rng.uniform(np.log(1e-3), np.log(0.5))))))
            theta0 = np.concatenate([v.numpy().ravel() for v in free]).astype(float)
            try:
                result = optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 150})
                value, _ = objective(result.x)
            except Exception as exc:  # a restart may hit a non-PSD kernel; the others still count
                log.warning("GP restart %d failed: %s", restart, exc)
                continue
            if np.isfinite(value) and value < best_loss:
                best_loss = value
                best = (model.kernel.lengthscales.numpy().copy(), float(model.kernel.variance.numpy()),
                        float(model.likelihood.variance.numpy()))
        if best is None:
            raise RuntimeError("every GP restart failed")
        lengthscales, variance, noise = best
        return Posterior(x, ys, np.atleast_1d(lengthscales), variance, noise, y_mean, y_std)

