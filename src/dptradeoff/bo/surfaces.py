"""What Figs 3-4 of paper 000 show for a 2-D problem: GP means of both oracles and the HVPoI
surface over the hyperparameter plane after fitting to the observed points, and the point HVPoI
chooses next (the star), all from one GP fit."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..problems.problem import Problem
from .propose import Settings, acquisition_function, choose, fit_surrogates
from .transforms import objectives_from_gp


def surfaces(problem: Problem, evals: pd.DataFrame, resolution: int, settings: Settings,
             rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(surface, next point). The surface has one row per cell of a resolution x resolution plot grid
    (uniform in the GPs' input box, i.e. log-spaced where a parameter is log-scaled): hyperparameters,
    predicted epsilon and error (GP means, back-transformed), their GP-space means and variances, and
    HVPoI. The next point is HVPoI's maximiser under the same fitted GPs."""
    if len(problem.domain) != 2:
        raise ValueError("surfaces are drawn for 2-D problems")
    s = fit_surrogates(problem, evals, settings, rng)
    axes = [np.linspace(low, high, resolution) for low, high in zip(s.scaler.lower, s.scaler.upper)]
    u0, u1 = np.meshgrid(*axes, indexing="ij")
    unit = np.stack([u0.ravel(), u1.ravel()], axis=1)
    mean, var = s.predict(unit)
    observed = s.scaler.to_unit(evals[problem.names].to_numpy(dtype=float))
    acquisition = acquisition_function(s, observed, settings)(unit)
    natural = objectives_from_gp(mean)
    frame = pd.DataFrame(s.scaler.unrounded(unit), columns=problem.names)  # not rounded: a smooth plot grid
    frame["predicted_epsilon"] = natural[:, 0]
    frame["predicted_error"] = natural[:, 1]
    frame["gp_privacy_mean"], frame["gp_utility_mean"] = mean[:, 0], mean[:, 1]
    frame["gp_privacy_var"], frame["gp_utility_var"] = var[:, 0], var[:, 1]
    frame["hvpoi"] = acquisition
    return frame, choose(problem, s, evals, 1, settings, rng)
