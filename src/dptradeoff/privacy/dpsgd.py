"""Privacy of DP-SGD / DP-Adam as trained here (paper 001 Alg. 3/4), as an event.

Each step samples a lot of m of the n examples uniformly *without replacement*, clips every
per-example gradient to L2 norm L and adds N(0, (2Lz)^2) to the sum. Under the replace-one
neighbouring relation the sum has L2 sensitivity 2L, so each step is a subsampled Gaussian
mechanism with noise multiplier z and sampling ratio m/n, composed T = epochs * round(n/m)
times: `training_event`. The accountant evaluates its RDP with WBK19 Thm 27, the bound
dp_accounting's `SampledWithoutReplacementDpEvent` implements under `REPLACE_ONE`, by
`wor_gaussian` (without dp_accounting's float64 cancellation, which errs both ways at high orders),
and converts it by its conversion (`conversions.py`; `accountant.py` says which order it takes).

`epsilon`, `calibrate_noise`, `rdp_curve` and `convert_curves` are the accountant for the callers
that name the conversion by its config name (`privacy.conversion`).
"""
from __future__ import annotations

import numpy as np

from .. import UserError
from . import calibration
from .accountant import ALL_ORDERS, HIGH_ORDERS, ORDERS, Accountant, accountant_named  # noqa: F401 - where callers look for them
from .calibration import MAX_NOISE, MIN_NOISE, Calibration  # noqa: F401 - where callers look for them
from .conversions import CONVERSIONS as _CONVERSIONS
from .conversions import improved_conversion  # noqa: F401 - where callers look for it
from .events import GaussianDpEvent, SampledWithoutReplacementDpEvent, SelfComposedDpEvent

CONVERSIONS = tuple(_CONVERSIONS)   # the names `privacy.conversion` takes


def steps(n: int, lot_size: int, epochs: int) -> int:
    """T = epochs * round(n / m): the number of noisy gradient steps of a training run."""
    if not (float(epochs).is_integer() and epochs >= 1):
        raise UserError(f"The number of epochs must be a positive integer, got {epochs!r}.")
    return int(epochs) * max(1, int(round(n / lot_size)))


def training_event(n: int, lot_size: int, epochs: int, noise: float) -> SelfComposedDpEvent:
    """A DP-SGD/DP-Adam run on n examples, lots of m, `epochs` epochs, noise multiplier z."""
    return _event_of_steps(n, lot_size, steps(n, lot_size, epochs), noise)


def _event_of_steps(n: int, lot_size: int, num_steps: int, noise: float) -> SelfComposedDpEvent:
    return SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, lot_size, GaussianDpEvent(noise)), num_steps)


def epsilon(n: int, lot_size: int, epochs: int, noise: float, delta: float, conversion: str = "dp_accounting") -> float:
    """(epsilon, delta)-DP of a DP-SGD/DP-Adam run: n examples, lots of m, `epochs` epochs, noise multiplier z."""
    event = training_event(n, lot_size, epochs, noise)
    return accountant_named(conversion).epsilon(event, delta)


def calibrate_noise(n: int, lot_size: int, epochs: int, eps: float, delta: float,
                    conversion: str = "dp_accounting") -> Calibration | None:
    """The noise multiplier z at which a run is (eps, delta)-DP, and `epsilon()` at that z
    (`calibration.calibrate_noise`); None when even z = MAX_NOISE does not reach eps."""
    accountant = accountant_named(conversion)
    num_steps = steps(n, lot_size, epochs)
    return calibration.calibrate_noise(accountant, lambda z: _event_of_steps(n, lot_size, num_steps, z), eps, delta,
                                       root=_root)


_root = calibration.root_of   # the starting point of the calibration (a test replaces it by a poor one)


def rdp_curve(n: int, lot_size: int, noise: float, num_steps: int, orders=ORDERS) -> np.ndarray:
    """RDP(alpha) at each order of a run of `num_steps` steps (inf where the noise is zero)."""
    return Accountant().rdp(_event_of_steps(n, lot_size, num_steps, noise), orders)


def convert_curves(curves: np.ndarray, delta: float, conversion: str) -> np.ndarray:
    """epsilon of many runs at once from their RDP curves (N, len(ALL_ORDERS)) (`Accountant.epsilons_of_rdp`)."""
    return accountant_named(conversion).epsilons_of_rdp(curves, delta)
