"""The accountant: turns an event (`events.py`) into epsilon at a given delta, for neighbouring
datasets that differ in one replaced record (replace-one).

Built once with an RDP -> (epsilon, delta) conversion (`conversions.py`); every event is then
analysed by the tightest analysis this package has for it:
- a closed form where there is one: pure epsilon (Laplace: 1/noise multiplier; SVT; objective
  perturbation; an `EpsilonDpEvent`), the analytic Gaussian mechanism (a Gaussian release, output
  perturbation), advanced composition of a pure-DP mechanism run `count` times (at that delta),
  basic composition of pure-DP mechanisms one after another;
- otherwise RDP, converted by the accountant's conversion: a Gaussian (alpha / (2 z^2)), an
  `EpsilonDpEvent` (binary randomized response's, the tight RDP of any epsilon-DP mechanism,
  `pure.py`), a Laplace mechanism (Mironov 2017 Prop. 6, `pure.py`), a Gaussian on a lot sampled
  without replacement (WBK19 Thm 27, `wor_gaussian`), any other mechanism run on rows drawn without
  replacement (WBK19 Thm 9, `wor_general`), a mechanism run `count` times (count x its
  RDP), several in sequence (the sum), repeat-and-select (Papernot & Steinke Thm 2), a random
  choice among mechanisms (the largest RDP: exp((alpha - 1) D_alpha) is jointly convex), and a
  Gaussian on a Poisson-sampled lot (dp_accounting's analysis, Mironov et al.
  2019: for add/remove-one neighbours, the relation under which Poisson sampling is analysed, e.g. by
  Opacus; an oracle that uses it states that relation as its `neighbouring`).
An event with neither stops with one sentence naming it.

Which RDP order is converted: the RDP is evaluated at every order of ALL_ORDERS in one pass and
converted at the best order of ORDERS, or of ALL_ORDERS when dp_accounting's best order in ORDERS
is >= 96: the rule of the previous, slower DP-SGD evaluation, kept so that every epsilon is the
same (tests compare with a frozen copy of it to 1e-9). It is an exhaustive minimum, not a search:
a search over the orders finds the same minimum only where epsilon(alpha) is quasi-convex, and it
is not, measured at paper scale: above order 256 Thm 27 drops its moment term, and in about 3% of
settings epsilon(alpha) falls, rises, then falls again between orders 384 and 1024; and for the
classic conversion the rule above can miss a high order that the minimum over ALL_ORDERS takes
(1 setting in 1,200). Any order gives a valid bound; the rule only decides which one is reported.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import UserError
from . import gaussian, objective_perturbation, output_perturbation, pure, svt, wor_gaussian, wor_general, wor_pld
from .composition import advanced_composition
from .conversions import IMPROVED, Conversion
from .events import (ComposedDpEvent, EpsilonDpEvent, GaussianDpEvent, LaplaceDpEvent, ObjectivePerturbationDpEvent,
                     OutputPerturbationDpEvent, PoissonSampledDpEvent, RandomChoiceDpEvent, RepeatAndSelectDpEvent,
                     SampledWithoutReplacementDpEvent, SelfComposedDpEvent, SparseVectorDpEvent)
from .repeat_and_select import papernot_steinke_rdp

# RDP orders. The high orders count only when the optimum sits at the top of the base set (small
# epsilon): a rule from when they doubled the cost (Thm 27 at order alpha needs the forward
# differences up to alpha), kept so that epsilon() stays what it was; any set of orders gives a
# valid bound, and tests check the set costs at most 3% against a dense grid.
ORDERS = (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
          14.0, 16.0, 18.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 128.0, 512.0, 1024.0)
HIGH_ORDERS = (160.0, 192.0, 256.0, 384.0)
ALL_ORDERS = tuple(sorted(ORDERS + HIGH_ORDERS))
_BASE = [ALL_ORDERS.index(a) for a in ORDERS]   # where ORDERS sit in ALL_ORDERS


@dataclass(frozen=True)
class Accountant:
    """epsilon of an event at a delta by RDP, converted by `conversion` (dp_accounting's by default); a Gaussian
    on a lot drawn without replacement by WBK19 Thm 27. Its `name` (`privacy.conversion`'s value) is what every
    evaluation row records in its `conversion` column."""
    conversion: Conversion = IMPROVED

    @property
    def name(self) -> str:
        return self.conversion.name

    @property
    def description(self) -> str:
        return f"RDP (WBK19 Thm 27 for lots without replacement), {self.conversion.name} conversion"

    def sampled_gaussian_step_rdp(self, q: float, z: float, orders: np.ndarray) -> np.ndarray:
        """One step's RDP of a Gaussian on a lot of a share q drawn without replacement (replace-one)."""
        return wor_gaussian.rdp(q, z, orders)

    def epsilon(self, event, delta: float) -> float:
        check_event(event)
        closed_form = self._closed_form(event, delta)
        if closed_form is not None:
            return closed_form
        check_delta(delta)
        return self.epsilon_of_rdp(self.rdp(event, ALL_ORDERS), delta)

    def _closed_form(self, event, delta: float) -> float | None:
        return _closed_form_epsilon(event, delta)

    def epsilon_at_all_orders(self, event, delta: float) -> float:
        """`epsilon`, with RDP converted at the best of ALL_ORDERS: one fixed set of orders, so smooth in the
        noise (for calibration's root finding), and never above `epsilon` (a minimum over more orders)."""
        check_event(event)
        closed_form = self._closed_form(event, delta)
        if closed_form is not None:
            return closed_form
        check_delta(delta)
        return self.conversion.epsilon(ALL_ORDERS, self.rdp(event, ALL_ORDERS), delta)[0]

    def rdp(self, event, orders=ALL_ORDERS) -> np.ndarray:
        """The event's RDP at each order (inf where it has none, e.g. zero noise)."""
        check_event(event)
        with np.errstate(over="ignore", invalid="ignore"):
            return _rdp(event, np.asarray(orders, dtype=float), self)

    def epsilon_of_rdp(self, curve: np.ndarray, delta: float) -> float:
        """epsilon of an RDP curve over ALL_ORDERS: at the best order of ORDERS, or of ALL_ORDERS when
        dp_accounting's best order in ORDERS is >= 96 (the rule above)."""
        base = curve[_BASE]
        if not np.isfinite(base).any():
            return math.inf
        if IMPROVED.epsilon(ORDERS, base, delta)[1] >= 96:
            return self.conversion.epsilon(ALL_ORDERS, curve, delta)[0]
        return self.conversion.epsilon(ORDERS, base, delta)[0]

    def epsilons_of_rdp(self, curves: np.ndarray, delta: float) -> np.ndarray:
        """`epsilon_of_rdp` for many curves at once, rows (N, len(ALL_ORDERS)) (tests compare the two)."""
        check_delta(delta)
        curves = np.atleast_2d(np.asarray(curves, dtype=float))
        orders = np.asarray(ALL_ORDERS)
        base = np.zeros(len(ALL_ORDERS), dtype=bool)
        base[_BASE] = True
        improved = IMPROVED.epsilons(orders, curves, delta)
        best_base_order = orders[_BASE][np.argmin(improved[:, base], axis=1)]
        chosen = self.conversion.epsilons(orders, curves, delta)
        eps = np.where(best_base_order >= 96, chosen.min(axis=1), chosen[:, base].min(axis=1))
        out = np.maximum(0.0, eps)
        return np.where(np.isfinite(curves[:, base]).any(axis=1), out, np.inf)


@dataclass(frozen=True)
class PLDAccountant(Accountant):
    """The tight accountant (`privacy.accountant: pld`, the default): a DP-SGD training -- a Gaussian on lots
    drawn without replacement, composed -- by the PLD of the symmetrised dominating pair (`wor_pld`, the argument
    in docs/accounting.md), the full batch by the analytic Gaussian. Where an event needs RDP (a release's random
    stopping, a composition with other mechanisms) each such step contributes the symmetrised pair's own RDP;
    the RDP is converted by `conversion`."""

    @property
    def name(self) -> str:
        return "pld"

    @property
    def description(self) -> str:
        return "PLD of the symmetrised sampled-Gaussian pair (tight, docs/accounting.md)"

    def sampled_gaussian_step_rdp(self, q: float, z: float, orders: np.ndarray) -> np.ndarray:
        if z < wor_pld.MIN_NOISE:   # see `_closed_form`
            return wor_gaussian.rdp(q, z, orders)
        return wor_pld.step_rdp(q, z, orders)

    def _closed_form(self, event, delta: float) -> float | None:
        training = sampled_gaussian_training(event)
        if training is None:
            return _closed_form_epsilon(event, delta)
        check_delta(delta)
        q, z, steps = training
        if z < wor_pld.MIN_NOISE:
            # one step's losses span more than float64's exp: WBK19's bound, valid for the same mechanism (and an
            # epsilon of hundreds, no practical guarantee)
            return Accountant(self.conversion).epsilon(event, delta)
        return wor_pld.epsilon(q, z, steps, delta)

    def epsilon_at_all_orders(self, event, delta: float) -> float:
        return self.epsilon(event, delta)


ACCOUNTANTS = ("pld", "rdp")   # the values `privacy.accountant` takes


def accountant_named(name: str) -> Accountant:
    """The accountant an accounting name gives: "pld" (the tight accountant), or an RDP conversion's name
    ("dp_accounting", "classic": the RDP accountant with that conversion)."""
    from .conversions import conversion_named

    return PLDAccountant() if name == "pld" else Accountant(conversion_named(name))


def accounting_name(privacy: dict) -> str:
    """The accounting name of a config's `privacy:` section: "pld" under `accountant: pld`, else the RDP
    conversion's name."""
    accountant = privacy.get("accountant", "pld")
    if accountant not in ACCOUNTANTS:
        raise UserError(f"privacy.accountant is {accountant!r}; give one of {', '.join(ACCOUNTANTS)} (pld: the tight "
                        f"accountant, rdp: WBK19's RDP bound with privacy.conversion).")
    return "pld" if accountant == "pld" else privacy.get("conversion", "dp_accounting")


def sampled_gaussian_training(event) -> tuple[float, float, int] | None:
    """(q, z, steps) of a Gaussian on lots drawn without replacement, run `steps` times (a DP-SGD training), or
    None for any other event."""
    count = 1
    if isinstance(event, SelfComposedDpEvent):
        event, count = event.event, int(event.count)
    if not (isinstance(event, SampledWithoutReplacementDpEvent) and isinstance(event.event, GaussianDpEvent)):
        return None
    n, lot_size, noise = event.source_dataset_size, event.sample_size, event.event.noise_multiplier
    _check_sampling(n, lot_size, noise)
    return lot_size / n, float(noise), count


def _check_sampling(n, lot_size, noise) -> None:
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise UserError(f"The dataset size n must be a positive integer, got {n!r}.")
    if not (isinstance(lot_size, (int, np.integer)) and 1 <= lot_size <= n):
        raise UserError(f"The lot size must be an integer between 1 and n = {n}, got {lot_size!r}.")
    if not noise >= 0:
        raise UserError(f"The noise multiplier must be >= 0, got {noise!r}.")


def check_event(event) -> None:
    """Stop with one sentence at an event whose parameters are no mechanism's (a negative count, epsilon
    or noise, a probability outside [0, 1], NaN): analysed as written, they would lower epsilon."""
    def number(value, what, low=0.0, high=math.inf):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not low <= value <= high:
            raise UserError(f"{type(event).__name__} has {what} = {value!r}, which no mechanism has; give a number in "
                            f"[{low:g}, {high:g}].")

    if isinstance(event, SelfComposedDpEvent):
        number(event.count, "count")
        if int(event.count) != event.count:
            raise UserError(f"SelfComposedDpEvent has count = {event.count!r}; give a whole number of runs.")
    elif isinstance(event, EpsilonDpEvent):
        number(event.epsilon, "epsilon")
    elif isinstance(event, (GaussianDpEvent, LaplaceDpEvent)):
        number(event.noise_multiplier, "noise_multiplier")
    elif isinstance(event, PoissonSampledDpEvent):
        number(event.sampling_probability, "sampling_probability", 0.0, 1.0)
    inner = getattr(event, "event", None)
    for member in ([inner] if inner is not None else []) + list(getattr(event, "events", None) or []):
        check_event(member)


def check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise UserError(f"delta must be in (0, 1), got {delta}; use e.g. 1e-5.")


def _unsupported(event) -> UserError:
    return UserError(f"The accountant has no analysis of {type(event).__name__}; describe the mechanism with an event "
                     f"of privacy/events.py that it analyses, or add its analysis to privacy/accountant.py.")


# --- closed forms: pure epsilon, the analytic Gaussian, composition of pure-DP mechanisms ---------------

@functools.singledispatch
def _pure_epsilon(event) -> float | None:
    """epsilon of an event known to be pure DP (at every delta), or None."""
    return None


@_pure_epsilon.register
def _(event: EpsilonDpEvent):
    return event.epsilon


@_pure_epsilon.register
def _(event: LaplaceDpEvent):
    return 1 / event.noise_multiplier if event.noise_multiplier > 0 else math.inf


@_pure_epsilon.register
def _(event: SparseVectorDpEvent):
    return svt.epsilon(event.answer_bound, event.noise_scale)


@_pure_epsilon.register
def _(event: ObjectivePerturbationDpEvent):
    return objective_perturbation.privacy_loss(event.noise_rate, event.extra_regularisation, event.dataset_size,
                                               event.regularisation, event.curvature_bound)


@_pure_epsilon.register
def _(event: SelfComposedDpEvent):
    once = _pure_epsilon(event.event)
    return None if once is None else event.count * once


@_pure_epsilon.register
def _(event: ComposedDpEvent):
    members = [_pure_epsilon(e) for e in event.events]
    return None if any(e is None for e in members) else sum(members)


@functools.singledispatch
def _closed_form_epsilon(event, delta: float) -> float | None:
    """epsilon at delta by a closed form, or None where the event needs RDP."""
    return _pure_epsilon(event)


@_closed_form_epsilon.register
def _(event: GaussianDpEvent, delta):
    return gaussian.epsilon(event.noise_multiplier, 1.0, delta)


@_closed_form_epsilon.register
def _(event: OutputPerturbationDpEvent, delta):
    return gaussian.epsilon(event.noise_std, output_perturbation.sensitivity(event.regularisation, event.dataset_size),
                            delta)


@_closed_form_epsilon.register
def _(event: SelfComposedDpEvent, delta):
    once = _pure_epsilon(event.event)
    if once is None:
        return None
    return event.count * once if delta == 0 else advanced_composition(once, event.count, delta)   # at delta 0: basic


# --- RDP -----------------------------------------------------------------------------------------

@functools.singledispatch
def _rdp(event, orders: np.ndarray, accountant) -> np.ndarray:
    raise _unsupported(event)


@_rdp.register
def _(event: GaussianDpEvent, orders, accountant):
    return wor_gaussian.rdp(1.0, event.noise_multiplier, orders)   # sampling everything: alpha / (2 z^2)


@_rdp.register
def _(event: EpsilonDpEvent, orders, accountant):
    return pure.epsilon_dp_rdp(event.epsilon, orders)


@_rdp.register
def _(event: LaplaceDpEvent, orders, accountant):
    return pure.laplace_rdp(event.noise_multiplier, orders)


@_rdp.register
def _(event: SampledWithoutReplacementDpEvent, orders, accountant):
    n, lot_size = event.source_dataset_size, event.sample_size
    if not isinstance(event.event, GaussianDpEvent):
        # any other mechanism run on the sample (e.g. a whole private search, docs/release.md): WBK19 Thm 9
        _check_sampling(n, lot_size, 0.0)
        return wor_general.rdp(lot_size / n, lambda inner: _rdp(event.event, inner, accountant), orders)
    noise = event.event.noise_multiplier
    _check_sampling(n, lot_size, noise)
    curve = accountant.sampled_gaussian_step_rdp(lot_size / n, noise, orders)
    return np.where(np.isnan(curve), np.inf, curve)


@_rdp.register
def _(event: PoissonSampledDpEvent, orders, accountant):
    if not isinstance(event.event, GaussianDpEvent):
        raise _unsupported(event.event)
    import logging

    from dp_accounting.rdp import rdp_privacy_accountant   # its scipy imports: only who samples by Poisson pays

    # A fractional order whose series does not converge comes back as inf (that order is not used: a
    # valid, looser bound), with a warning per call that would flood a calibration's output.
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        return np.asarray(rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(
            event.sampling_probability, event.event.noise_multiplier, orders), dtype=float)
    finally:
        absl.setLevel(level)


@_rdp.register
def _(event: SelfComposedDpEvent, orders, accountant):
    return event.count * _rdp(event.event, orders, accountant)


@_rdp.register
def _(event: ComposedDpEvent, orders, accountant):
    return sum((_rdp(e, orders, accountant) for e in event.events), np.zeros(len(orders)))


@_rdp.register
def _(event: RandomChoiceDpEvent, orders, accountant):
    return np.max([_rdp(e, orders, accountant) for e in event.events], axis=0)


@_rdp.register
def _(event: RepeatAndSelectDpEvent, orders, accountant):
    return papernot_steinke_rdp(orders, _rdp(event.event, orders, accountant), event.shape, event.mean)
