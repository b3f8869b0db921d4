"""The privacy of bolt-on output perturbation (Wu et al. 2017) as `train/outpert.py` trains it:
projected SGD on rows of norm 1 on the ball ||w|| <= 1/gamma, where the regularised logistic loss
is L = 1 + gamma (1/gamma) = 2 Lipschitz, has L2 sensitivity 2L/(gamma n) (Wu et al. Thm 6);
releasing w + N(0, sigma^2 I) is then the Gaussian mechanism with noise multiplier
sigma / sensitivity."""
from __future__ import annotations

LIPSCHITZ = 2.0


def sensitivity(gamma: float, n: int) -> float:
    return 2.0 * LIPSCHITZ / (gamma * n)
