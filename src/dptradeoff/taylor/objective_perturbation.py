"""Objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011, Alg. 2) as written in paper 002 §3.2.

theta_eps = argmin L(theta, D) + (lam/2)||theta||^2 + (1/n) b'theta + (delta_eps/2)||theta||^2,
L the mean loss over n rows with ||x|| <= 1, labels +-1, b = shape / beta_eps with `shape` drawn once
per noise draw and shared by every eps (paper 002's "same uniform draws", so b'_eps = -b beta'/beta:
eq. 13). With L0 = log(1 + 2c/(n lam) + c^2/(n lam)^2) (c bounds the loss's second derivative):
  eps >  L0: beta = (eps - L0)/2, delta_eps = 0;
  eps <= L0: beta = eps/4,         delta_eps = c/(n(e^{eps/4} - 1)) - lam.
Either way the privacy loss 2 beta + 2 log(1 + c/(n(lam + delta_eps))) equals eps (pure DP,
replace-one neighbours; tests recompute it) - for the noise density proportional to
exp(-beta ||b||) (`NormNoise`, "dp") and the exact minimiser (`Exact`) only.

Paper 002 §6.1 calls its mechanism "output perturbation" and samples each coordinate of b from a
Laplace distribution (eqs. 10-13: `CoordinateLaplaceNoise`, "as_published"). That density is
proportional to exp(-beta ||b||_1); ||b - b'||_1 <= 2 sqrt(d) makes the proof's bound
2 beta sqrt(d) + the Jacobian term, so it is not eps-DP at the eps it is labelled with.

Solvers: `Exact` (L-BFGS to the minimiser, what the proof and eq. 6 assume), `GradientDescent`
(full-batch steps from 0) and `MinibatchSGD` (Iyengar et al. 2019's code, which paper 002 says it
builds on: `num_iters` = epochs over fixed batches of 50 from one permutation, constant learning
rate; its defaults are paper 002's "100 iterations, learning rate 0.01"). Only `Exact` releases the
minimiser the eps-DP proof covers.

Losses (paper 002 eq. 19), on the margin z = y theta'x: logistic log(1 + e^{-z}) (c = 1/4) and
Huber SVM with h = 1/(2c) (c = 1/(2h), second derivative 1/(2h) on |1 - z| <= h).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .. import UserError
from ..privacy.objective_perturbation import Noise, noise_parameters, privacy_loss  # noqa: F401 (taylor's names)

LOSSES = ("logistic", "huber")


def noise_shape(d: int, rng: np.random.Generator, size: int) -> np.ndarray:
    """`size` draws of G u with G ~ Gamma(d, 1) and u uniform on the sphere: b = (G u)/beta has
    density proportional to exp(-beta ||b||)."""
    u = rng.normal(size=(size, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return rng.gamma(d, 1.0, size=(size, 1)) * u


def laplace_from_uniforms(u: np.ndarray) -> np.ndarray:
    """Paper 002 eq. 12 with beta = 1: F^{-1}(c) = ln(2c) for c <= 1/2, -ln(2 - 2c) above: independent
    Laplace(1) coordinates, so b = F^{-1}(c)/beta is Laplace(1/beta) and b'_eps = -b beta'/beta (eq. 13)."""
    u = np.asarray(u, dtype=float)
    return np.where(u <= 0.5, np.log(2 * u), -np.log(2 - 2 * u))


@dataclass(frozen=True)
class NormNoise:
    """The density the eps-DP proof needs: proportional to exp(-beta ||b||) (`noise_shape`)."""
    name: ClassVar[str] = "dp"
    dp: ClassVar[bool] = True
    description: ClassVar[str] = "density proportional to exp(-beta ||b||) (Chaudhuri et al. 2011)"

    def shapes(self, d: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return noise_shape(d, rng, size)


@dataclass(frozen=True)
class CoordinateLaplaceNoise:
    """Paper 002 eqs. 10-13 as published: every coordinate of b Laplace(1/beta), from uniforms drawn once
    and shared by every eps. Not eps-DP: the proof's bound becomes 2 beta sqrt(d) plus the Jacobian term."""
    name: ClassVar[str] = "as_published"
    dp: ClassVar[bool] = False
    description: ClassVar[str] = "independent Laplace(1/beta) coordinates from shared uniforms (paper 002 eqs. 10-13)"

    def shapes(self, d: int, rng: np.random.Generator, size: int) -> np.ndarray:
        # uniforms on the open interval (0, 1): eq. 12 is infinite at 0 and 1
        return laplace_from_uniforms((rng.integers(0, 2**53, size=(size, d)) + 0.5) / 2**53)


NOISES = {law.name: law for law in (NormNoise(), CoordinateLaplaceNoise())}


def huber_h(c: float) -> float:
    return 1.0 / (2.0 * c)


def loss_terms(loss: str, z: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value, first and second derivative of the loss at margins z."""
    return (loss_value(loss, z, c), *loss_derivatives(loss, z, c))


def loss_value(loss: str, z: np.ndarray, c: float) -> np.ndarray:
    if loss == "logistic":
        return np.logaddexp(0.0, -z)
    if loss == "huber":
        h = huber_h(c)
        return np.where(z > 1 + h, 0.0, np.where(z < 1 - h, 1 - z, (1 + h - z) ** 2 / (4 * h)))
    raise UserError(f"Unknown loss {loss!r}; use one of {', '.join(LOSSES)}.")


def loss_derivatives(loss: str, z: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """First and second derivative of the loss at margins z (what training needs: the value's
    logaddexp was a third of gradient descent's elementwise work)."""
    if loss == "logistic":
        s = 0.5 * (1.0 - np.tanh(0.5 * z))          # sigmoid(-z)
        return -s, s * (1.0 - s)
    if loss == "huber":
        h = huber_h(c)
        first = np.where(z > 1 + h, 0.0, np.where(z < 1 - h, -1.0, -(1 + h - z) / (2 * h)))
        second = np.where(np.abs(1 - z) <= h, 1 / (2 * h), 0.0)
        return first, second
    raise UserError(f"Unknown loss {loss!r}; use one of {', '.join(LOSSES)}.")


def empirical_loss(theta: np.ndarray, x: np.ndarray, y: np.ndarray, loss: str, c: float) -> np.ndarray:
    """L(theta, D) for each row of theta (shape (r, d)) -> (r,)."""
    z = y[:, None] * (x @ theta.T)
    return loss_value(loss, z, c).mean(axis=0)


def gradient(theta: np.ndarray, x: np.ndarray, y: np.ndarray, loss: str, c: float) -> np.ndarray:
    """grad L(theta, D) for each row of theta -> (r, d)."""
    z = y[:, None] * (x @ theta.T)
    first = loss_derivatives(loss, z, c)[0]
    return ((first * y[:, None]).T @ x) / len(x)


def descend(x: np.ndarray, y: np.ndarray, loss: str, c: float, lam: float, noises: list[Noise], shape: np.ndarray,
            batches: list[slice], learning_rate: float, gram: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Gradient steps from 0 for every eps (b = shape / beta_eps), one per entry of `batches` (rows x[batch]:
    the step is the batch's mean loss gradient + (lam + delta) theta + b/n, the perturbed objective's
    stochastic gradient), and alongside the exact derivative J = d theta_T / d eps of the iterate it returns
    (forward sensitivity through the same batches: J <- J - lr (H_batch J + (lam + delta) J + delta' theta + b'/n)).
    At convergence J equals eq. 6's -W^{-1}(b'/n + delta' theta); after few small steps it does not, and this
    is the derivative of the model actually trained.

    With `gram` = x x' (worth it when d > n: Gisette) the same iteration runs in the row space: both iterates
    stay of the form C x + k shape (C: (r, n), k: (r, 1)), so x theta' = gram C' + (x shape) k' and a step
    costs n |batch| instead of d |batch| per model. Equal to the form above up to rounding (tests)."""
    n = len(x)
    beta = np.array([nz.beta for nz in noises])[:, None]
    delta = np.array([nz.delta for nz in noises])[:, None]
    d_beta = np.array([nz.d_beta for nz in noises])[:, None]
    d_delta = np.array([nz.d_delta for nz in noises])[:, None]
    if gram is not None:
        return _descend_gram(x, gram, y, loss, c, lam + delta, beta, d_beta, d_delta, shape, batches, learning_rate)
    r = len(noises)
    b = shape[None, :] / beta
    drift = np.concatenate([b, -b * d_beta / beta]) / n       # b/n and b'/n: the steps' constant parts
    ridge = np.concatenate([lam + delta, lam + delta])
    state = np.zeros((2 * r, len(shape)))                      # theta (first r rows) and J (last r rows)
    for batch in batches:
        xb, yb = x[batch], y[batch]
        scores = xb @ state.T                                  # x_batch theta' and x_batch J', (m, 2r)
        first, second = loss_derivatives(loss, yb[:, None] * scores[:, :r], c)
        back = np.concatenate([first * yb[:, None], second * scores[:, r:]], axis=1)
        step = (back.T @ xb) / len(xb) + ridge * state + drift  # grad L_batch and H_batch J (y^2 = 1), ...
        step[r:] += d_delta * state[:r]                         # ... + delta' theta for J
        state -= learning_rate * step
    return state[:r], state[r:]


def _descend_gram(x, gram, y, loss, c, ridge, beta, d_beta, d_delta, shape, batches, learning_rate):
    """`descend` with theta = A x + p shape and J = B x + q shape (ridge = lam + delta_eps; every per-eps
    array of shape (r, 1)): the coefficients take the same steps; a batch's loss gradient moves only the
    coefficients of its rows."""
    n, r = len(x), len(beta)
    along_shape = x @ shape                                    # x shape, (n,)
    a, b = np.zeros((r, n)), np.zeros((r, n))                  # row-space coefficients of theta and J
    p, q = np.zeros((r, 1)), np.zeros((r, 1))                  # their coefficients on the noise direction
    for batch in batches:
        yb, shape_b = y[batch], along_shape[batch]
        scores = gram[batch] @ np.concatenate([a, b]).T        # x_batch (A x)' and x_batch (B x)', (m, 2r)
        x_theta = scores[:, :r] + shape_b[:, None] * p.T       # x_batch theta'
        x_jac = scores[:, r:] + shape_b[:, None] * q.T         # x_batch J'
        first, second = loss_derivatives(loss, yb[:, None] * x_theta, c)
        step_a, step_b = ridge * a, ridge * b + d_delta * a
        step_a[:, batch] += (first * yb[:, None]).T / len(yb)  # grad L_batch = (first y)' x_batch / m
        step_b[:, batch] += (second * x_jac).T / len(yb)       # H_batch J = (second x_batch J')' x_batch / m
        step_p = ridge * p + 1.0 / (beta * n)                  # b / n = shape / (beta n)
        step_q = ridge * q + d_delta * p - d_beta / (beta**2 * n)   # b' / n = -shape d_beta / (beta^2 n)
        a, p = a - learning_rate * step_a, p - learning_rate * step_p
        b, q = b - learning_rate * step_b, q - learning_rate * step_q
    return a @ x + p * shape[None, :], b @ x + q * shape[None, :]


def minimise(x: np.ndarray, y: np.ndarray, loss: str, c: float, lam: float, deltas: np.ndarray,
             b: np.ndarray) -> np.ndarray:
    """The minimiser of the perturbed objective for each row of b (shape (r, d)) with its delta_eps:
    L-BFGS from 0 to convergence (gradient norm ~1e-8)."""
    from scipy import optimize

    n, d = x.shape
    out = np.empty_like(b)
    for i, (delta, noise) in enumerate(zip(np.asarray(deltas, dtype=float), b)):
        def objective(t, ridge=lam + delta, noise=noise):
            z = y * (x @ t)                                    # margins, shared by the value and the gradient
            value = loss_value(loss, z, c).mean() + 0.5 * ridge * t @ t + noise @ t / n
            return value, x.T @ (loss_derivatives(loss, z, c)[0] * y) / n + ridge * t + noise / n
        out[i] = optimize.minimize(objective, np.zeros(d), jac=True, method="L-BFGS-B",
                                   options={"maxiter": 10_000, "gtol": 1e-12, "ftol": 1e-15}).x
    return out


@dataclass(frozen=True)
class Exact:
    """L-BFGS to the minimiser: what Chaudhuri et al.'s eps-DP proof covers and eq. 6 assumes."""
    name: ClassVar[str] = "exact"
    exact: ClassVar[bool] = True

    def describe(self) -> str:
        return "exact minimiser (L-BFGS to convergence)"

    def train(self, x, y, loss, c, lam, noises: list[Noise], shape, rng=None, gram=None):
        """(theta per eps, None): no derivative of its own beyond eq. 6's."""
        b = np.stack([shape / nz.beta for nz in noises])
        return minimise(x, y, loss, c, lam, np.array([nz.delta for nz in noises]), b), None


@dataclass(frozen=True)
class GradientDescent:
    """`iterations` full-batch gradient steps of `learning_rate` from 0 (paper 002's "100 iterations,
    learning rate 0.01" read as full-batch steps)."""
    iterations: int
    learning_rate: float
    name: ClassVar[str] = "gd"
    exact: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.iterations} full-batch gradient steps of {self.learning_rate:g} from 0"

    def train(self, x, y, loss, c, lam, noises: list[Noise], shape, rng=None, gram=None):
        """(theta per eps, d theta / d eps of those iterates)."""
        return descend(x, y, loss, c, lam, noises, shape, [slice(None)] * self.iterations, self.learning_rate, gram)


@dataclass(frozen=True)
class MinibatchSGD:
    """Iyengar et al. 2019's minibatch SGD (their `psgd_minibatched`, without its output noise): one
    permutation of the rows, cut into fixed batches of `batch_size` (the last one shorter), and `epochs`
    passes over them in that order with a constant `learning_rate` from 0: epochs * ceil(n / batch_size)
    steps (their defaults num_iters = 100, learning rate 0.01, B = 50). The permutation is drawn once per
    noise draw and shared by every eps, like the noise."""
    epochs: int
    learning_rate: float
    batch_size: int = 50
    name: ClassVar[str] = "sgd"
    exact: ClassVar[bool] = False

    def describe(self) -> str:
        return (f"minibatch SGD as Iyengar et al. 2019: {self.epochs} epochs over fixed batches of {self.batch_size}, "
                f"steps of {self.learning_rate:g} from 0")

    def steps(self, n: int) -> int:
        return self.epochs * math.ceil(n / self.batch_size)

    def batches(self, n: int) -> list[slice]:
        """The steps' batches, as slices of the permuted rows."""
        return [slice(i, min(i + self.batch_size, n)) for i in range(0, n, self.batch_size)] * self.epochs

    def train(self, x, y, loss, c, lam, noises: list[Noise], shape, rng: np.random.Generator, gram=None):
        """(theta per eps, d theta / d eps of those iterates)."""
        order = rng.permutation(len(x))
        gram = None if gram is None else gram[np.ix_(order, order)]
        return descend(x[order], y[order], loss, c, lam, noises, shape, self.batches(len(x)), self.learning_rate, gram)


def make_solver(name: str, iterations: int, learning_rate: float, batch_size: int):
    """The solver a config names: `iterations` counts gradient steps for gd and epochs for sgd."""
    solvers = {"exact": lambda: Exact(), "gd": lambda: GradientDescent(iterations, learning_rate),
               "sgd": lambda: MinibatchSGD(iterations, learning_rate, batch_size)}
    if name not in solvers:
        raise UserError(f"Unknown solver {name!r}; use one of {', '.join(solvers)}.")
    return solvers[name]()
