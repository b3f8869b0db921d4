"""Hyperparameters shared by the DP-SGD / DP-Adam trainers and the Adam constants of paper 001 Alg. 4."""
from __future__ import annotations

from dataclasses import dataclass

ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA = 0.9, 0.999, 1e-8


@dataclass(frozen=True)
class DPSGDHyper:
    epochs: int
    lot_size: int
    learning_rate: float
    noise: float      # z: N(0, (2 L z)^2) is added to the sum of clipped gradients (paper's "noise variance")
    clip: float       # L: per-example L2 clipping norm

    def steps(self, n: int) -> int:
        from ..privacy.dpsgd import steps

        return steps(n, self.lot_size, self.epochs)

    def release_grid(self, coordinates: int):
        """The exact grid a release's step adds its noise on (`exact_noise`): the Gaussian of sd 2 L z with
        replace-one sensitivity 2 L on the clipped sum of `coordinates` parameters, each at most m L."""
        from .. import exact_noise

        return exact_noise.gaussian(2.0 * self.clip * self.noise, 2.0 * self.clip, coordinates, self.lot_size * self.clip)

