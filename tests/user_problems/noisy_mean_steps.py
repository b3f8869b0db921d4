"""An iterative user algorithm with a trace axis: noisy gradient descent on the mean of N values in
[0, 1], `steps` steps of size `rate`, each gradient released with Gaussian noise of scale `sigma`.
Its training of T steps passes through every shorter training, so it declares `trace_axis = "steps"`
and returns its utility after every step (`utility_trace`)."""
from __future__ import annotations

import numpy as np

from dptradeoff.privacy import gaussian

N = 1000
VALUES = np.linspace(0.0, 1.0, N)


class NoisyMeanSteps:
    trace_axis = "steps"

    def epsilon(self, point, *, n, delta):
        """T Gaussian releases of sensitivity 1/N compose to one of noise sigma / sqrt(T) (replace-one)."""
        return gaussian.epsilon(point["sigma"] / np.sqrt(point["steps"]), 1.0 / N, delta)

    def utility_trace(self, point, data, rng):
        estimate, out = 0.0, {}
        for step in range(1, int(point["steps"]) + 1):
            gradient = estimate - VALUES.mean() + rng.normal(0.0, point["sigma"])
            estimate -= point["rate"] * gradient
            out[step] = float(np.exp(-abs(estimate - VALUES.mean()) / 0.05))
        return out

    def utility(self, point, data, rng):
        return self.utility_trace(point, data, rng)[int(point["steps"])]


class WrongAxis(NoisyMeanSteps):
    trace_axis = "rate"
