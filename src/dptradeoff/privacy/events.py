"""What a private computation does, described as an event (after dp_accounting's `DpEvent`): the
accountant (`accountant.py`) turns an event into epsilon. An event says which mechanism ran on
what, never how it is analysed.

dp_accounting's own classes are used where it has the mechanism: a Gaussian or Laplace release
(noise multiplier = noise scale / sensitivity), sampling a fixed-size lot without replacement, a
mechanism run `count` times, several mechanisms one after another, and repeat-and-select
(Papernot & Steinke 2022). They are loaded from dp_accounting's `dp_event` module alone: importing
the package runs its `__init__`, which imports its PLD accountant with scipy.signal and
scipy.stats, about 1 s of every evaluation job. They are the very same classes (a later
`import dp_accounting` finds the module loaded), so dp_accounting's accountants accept our events,
which the tests use to cross-check ours.

Below them, the events of mechanisms dp_accounting lacks. A new mechanism gets its event here and
its analysis in a module of its own, registered in `accountant.py`.
"""
from __future__ import annotations

import importlib.util
import os

import attr

from ..module_files import module_from_file


def _load_dp_event():
    """dp_accounting.dp_event without dp_accounting's package `__init__` (see above)."""
    package = importlib.util.find_spec("dp_accounting")   # finds the package without importing it
    path = os.path.join(package.submodule_search_locations[0], "dp_event.py")
    return module_from_file("dp_accounting.dp_event", path)


_dp_event = _load_dp_event()
DpEvent = _dp_event.DpEvent
GaussianDpEvent = _dp_event.GaussianDpEvent
LaplaceDpEvent = _dp_event.LaplaceDpEvent
SampledWithoutReplacementDpEvent = _dp_event.SampledWithoutReplacementDpEvent
PoissonSampledDpEvent = _dp_event.PoissonSampledDpEvent
SelfComposedDpEvent = _dp_event.SelfComposedDpEvent
ComposedDpEvent = _dp_event.ComposedDpEvent
RepeatAndSelectDpEvent = _dp_event.RepeatAndSelectDpEvent


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDpEvent(DpEvent):
    """A mechanism known only to be epsilon-DP (pure DP), e.g. propose-test's noisy test."""
    epsilon: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class SparseVectorDpEvent(DpEvent):
    """The sparse vector technique of paper 000 Alg. 1 on queries of sensitivity 1: it answers until
    `answer_bound` queries (C) were above the threshold, with Laplace noise of total scale
    `noise_scale` (b) split between the threshold and the queries (`svt.noise_split`)."""
    answer_bound: int
    noise_scale: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class OutputPerturbationDpEvent(DpEvent):
    """Bolt-on output perturbation (Wu et al. 2017, as trained by `train/outpert.py`): projected SGD
    with L2 regularisation `regularisation` (gamma) on `dataset_size` rows, then Gaussian noise of
    standard deviation `noise_std` (sigma) on the weights."""
    regularisation: float
    noise_std: float
    dataset_size: int


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ObjectivePerturbationDpEvent(DpEvent):
    """Objective perturbation (Chaudhuri et al. 2011 Alg. 2, paper 002 §3.2) releasing the exact
    minimiser: noise b with density proportional to exp(-`noise_rate` ||b||) (beta) in the objective,
    extra L2 regularisation `extra_regularisation` (delta_eps) on top of `regularisation` (lambda),
    `dataset_size` rows of norm <= 1, the loss's second derivative bounded by `curvature_bound` (c)."""
    noise_rate: float
    extra_regularisation: float
    dataset_size: int
    regularisation: float
    curvature_bound: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class RandomChoiceDpEvent(DpEvent):
    """One of `events`, chosen at random independently of the data (e.g. random hyperparameters)."""
    events: tuple
