"""Paper 002's experiments: actual loss vs eps and the first-order estimates from measuring
points (Fig. 1, Table 1), and the estimation error against the number of training rows (Fig. 2),
for each *reading* of paper 002's protocol: a solver and a noise law (`Reading`).

For each repeat the noise shape is drawn once and shared by every eps (so the actual-loss curve and
the estimates see the same noise, as paper 002's "same uniform draws"); so is the SGD solver's
permutation of the rows. The loss is the empirical training loss L(theta_eps, D).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..seeds import rng as make_rng
from ..train import outpert
from . import estimate
from .objective_perturbation import empirical_loss, gradient, loss_value, noise_parameters


@dataclass(frozen=True)
class Reading:
    """One reading of paper 002's protocol: how the model is trained (`solver`) and how b is drawn (`noise`)."""
    name: str
    solver: object          # objective_perturbation.Exact, GradientDescent or MinibatchSGD
    noise: object           # objective_perturbation.NormNoise or CoordinateLaplaceNoise

    @property
    def guarantee(self) -> str:
        """What the released models are covered by, in words printed beside every number of this reading."""
        if self.noise.dp and self.solver.exact:
            return "eps-DP (Chaudhuri et al. 2011: exact minimiser, density exp(-beta ||b||))"
        reasons = []
        if not self.noise.dp:
            reasons.append("per-coordinate Laplace noise (the proof's bound becomes 2 beta sqrt(d))")
        if not self.solver.exact:
            reasons.append(f"solver {self.solver.name} does not release the exact minimiser the proof covers")
        return "not eps-DP: " + "; ".join(reasons) + "; eps labels the noise level"

    @property
    def label(self) -> str:
        """Short label for figure legends and titles."""
        return f"{self.name}: {self.solver.name} solver, {self.noise.name} noise, " + (
            "eps-DP" if self.noise.dp and self.solver.exact else "not eps-DP")


def prepare(x: np.ndarray, y: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n rows drawn without replacement, a bias feature, rows scaled to norm 1, labels {0,1} -> +-1."""
    take = rng.choice(len(x), size=min(n, len(x)), replace=False)
    return outpert.normalise(x[take]), 2.0 * np.asarray(y[take], dtype=float) - 1.0


def measure(x: np.ndarray, y: np.ndarray, loss: str, how: Reading, *, c: float, lam: float, repeats: int,
            targets: list[float], measuring: list[float], seed_parts: tuple) -> pd.DataFrame:
    """One row per (repeat, measuring point, target, derivative): the actual loss at the target and
    its first-order estimate from the measuring point (and the actual loss there, `measured_loss`).
    Two derivatives: "eq6" (paper 002's, which assumes theta_eps minimises the objective) and, with an
    iterative solver, "unrolled" (the exact derivative of the iterate that was trained). c bounds the
    loss's second derivative, lam is the objective's regulariser, `repeats` the noise draws."""
    n, d = x.shape
    eps_all = np.array(sorted(set(targets) | set(measuring)), dtype=float)
    noises = [noise_parameters(float(e), n, lam, c) for e in eps_all]
    gram = x @ x.T if d > n else None   # more features than rows (Gisette): train and solve in the row space
    rows = []
    for r in range(repeats):
        shape = how.noise.shapes(d, make_rng(*seed_parts, "noise", r), 1)[0]
        b = np.stack([shape / nz.beta for nz in noises])
        thetas, jacs = how.solver.train(x, y, loss, c, lam, noises, shape, make_rng(*seed_parts, "order", r), gram)
        losses = empirical_loss(thetas, x, y, loss, c)
        actual = dict(zip(eps_all, losses))
        grads = gradient(thetas, x, y, loss, c)
        for m in measuring:
            i = int(np.flatnonzero(eps_all == m)[0])
            derivatives = {"eq6": estimate.loss_derivative(x, y, thetas[i], b[i], noises[i], loss, c, lam, gram)}
            if jacs is not None:
                derivatives["unrolled"] = float(grads[i] @ jacs[i])
            for name, deriv in derivatives.items():
                est = estimate.estimate_loss(actual[m], deriv, m, targets)
                for t, e in zip(targets, est):
                    rows.append({"repeat": r, "derivative": name, "measuring": m, "target": t, "actual": float(actual[t]),
                                 "estimate": float(e), "measured_loss": float(actual[m]), "slope": deriv})
    return pd.DataFrame(rows)


def loss_at_zero(loss: str, c: float) -> float:
    """L(0, D): every margin is 0 (log 2 for logistic, (1 + h)^2/(4h) for Huber)."""
    return float(loss_value(loss, np.zeros(1), c)[0])


def fitted_lines(frame: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame]:
    """Fig. 1's curve and lines, averaged over repeats: the actual loss per eps (the targets and the
    measuring points), and per (derivative, measuring point) the line through the mean loss at the
    measuring point with the mean slope (the mean of the per-repeat estimates, which are linear in the
    target). Each line touches the curve at its measuring point."""
    measured = frame.groupby("measuring")["measured_loss"].mean()
    curve = pd.concat([frame.groupby("target")["actual"].mean(), measured])
    curve = curve[~curve.index.duplicated()].sort_index()
    lines = frame.groupby(["derivative", "measuring"], as_index=False, sort=False).agg(
        at_measuring=("measured_loss", "mean"), slope=("slope", "mean"))
    return curve, lines


def errors(frame: pd.DataFrame) -> pd.DataFrame:
    """Average |estimate - actual| over targets and repeats, per derivative and measuring point."""
    frame = frame.assign(error=(frame["estimate"] - frame["actual"]).abs())
    return frame.groupby(["derivative", "measuring"], as_index=False)["error"].mean()
