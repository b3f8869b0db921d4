"""What a release needs of a problem's oracle beyond the study's two oracles:

    event(point, *, n) -> DpEvent        the training's privacy as an event the accountant analyses
                                          (privacy/events.py; dp_accounting's classes are the same), or
                                          its description {"event": class name, field: value}
    train(point, data, rng) -> model     one training on data.x_train / data.y_train
    score(model, data) -> float          the model's utility on data.x_test (and data.y_test, where the data have
                                          labels), in [0, 1]: a mean over the rows (sensitivity 1/rows)
    weights(model) -> dict of arrays     optional: what is saved (a torch module's state_dict by default)
    calibrate(point, *, n, epsilon, delta) -> point
                                          optional: the point with its privacy parameter set so that its
                                          training is (epsilon, delta)-DP (e.g. a pure-epsilon algorithm's
                                          own epsilon); without it the release recalibrates `noise`

The built-in DP-SGD oracles define the first four (problems/builtin.py); an oracle of your own adds
them. Whatever `calibrate` returns is checked by the accountant: its event must be within the target.
`check_releasable` runs at config time, before any tuning: the methods are there, there is a privacy
parameter to recalibrate, and the accountant can compose the training's event with the noisy score."""
from __future__ import annotations

import numpy as np

from .. import UserError
from ..privacy.accountant import Accountant
from ..privacy.calibration import calibrate_noise
from ..privacy.descriptions import event_from_description
from ..privacy.events import ComposedDpEvent, GaussianDpEvent
from ..problems.problem import Problem

# The training rows of the event checked at config time (the data are not loaded then); large enough
# for any lot size of the built-in domains.
NOMINAL_ROWS = 1_000_000

REQUIRED = {"event": "event(point, *, n) returning the training's DpEvent",
            "train": "train(point, data, rng) returning the trained model",
            "score": "score(model, data) returning the model's utility (a mean over data.x_test's rows) in [0, 1]"}


def oracle_target(problem: Problem):
    """The object whose methods the release calls: a user's oracle object, or the built-in oracle."""
    return getattr(problem.oracle, "target", problem.oracle)


def check_releasable(problem: Problem, accountant: Accountant | None = None) -> None:
    """One sentence naming what the problem's oracle lacks for a release (the config check runs it)."""
    target = oracle_target(problem)
    for name, signature in REQUIRED.items():
        if not callable(getattr(target, name, None)):
            raise UserError(f"The oracle of {problem.name} has no {name}() method, which a release needs: add "
                            f"{signature} (docs/release.md).")
    if not callable(getattr(target, "calibrate", None)) and "noise" not in problem.names:
        raise UserError(f"{problem.name} has neither a `noise` parameter nor a calibrate() method for the release to "
                        f"set its privacy with; name the noise multiplier `noise` in its domain, or add "
                        f"calibrate(point, *, n, epsilon, delta) returning the point at that privacy (docs/release.md).")
    middle = {p.name: (p.low * p.high) ** 0.5 if p.log else (p.low + p.high) / 2 for p in problem.domain}
    point = problem.check({p.name: round(middle[p.name]) if p.integer else middle[p.name] for p in problem.domain})
    event = training_event(problem, point, NOMINAL_ROWS)
    try:
        (accountant or Accountant()).rdp(ComposedDpEvent([event, GaussianDpEvent(1.0)]))
    except UserError as exc:
        raise UserError(f"{problem.name} cannot be released: its training's event {type(event).__name__} is composed "
                        f"with the noisy score under RDP, and {str(exc)[0].lower()}{str(exc)[1:]}") from None


def training_event(problem: Problem, point: dict, n: int):
    """The event of one training at `point` on `n` rows (the oracle's event, or its description)."""
    try:
        event = oracle_target(problem).event(point, n=n)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(f"The event() of {problem.name}'s oracle raised for {point} ({type(exc).__name__}: {exc}); fix "
                        f"it.") from None
    return event_from_description(event)


def calibrate_hook(problem: Problem, point: dict, *, n: int | None, epsilon: float, delta: float) -> dict | None:
    """The oracle's `calibrate` under its contract (docs/release.md): the point at that privacy, None where no setting
    of the point reaches it; a partial dict (only the keys it changes) is merged into the point. Anything else it
    returns, and any error it raises, is named in a UserError. The caller checks the returned point's epsilon."""
    hook = getattr(oracle_target(problem), "calibrate")
    try:
        answer = hook(dict(point), n=n, epsilon=epsilon, delta=delta)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(f"The calibrate() of {problem.name}'s oracle raised for {point} at epsilon {epsilon:g} "
                        f"({type(exc).__name__}: {exc}); fix it, or return None where the point cannot reach that "
                        f"epsilon.") from None
    if answer is None:
        return None
    if not isinstance(answer, dict):
        raise UserError(f"The calibrate() of {problem.name}'s oracle returned {answer!r} for {point} at epsilon "
                        f"{epsilon:g}; it must return the point as a dict (or only the keys it changes), or None where "
                        f"the point cannot reach that epsilon.")
    return {**point, **answer}


def calibrated(problem: Problem, accountant: Accountant, point: dict, *, n: int, epsilon: float,
               delta: float) -> tuple[dict, float] | None:
    """(the point at which one training on `n` rows is (epsilon, delta)-DP by `accountant`, that
    training's epsilon), or None where no setting reaches it: the oracle's `calibrate` where it has one,
    checked by the accountant, else the smallest `noise` that reaches it (`calibrate_noise`)."""
    hook = getattr(oracle_target(problem), "calibrate", None)
    if not callable(hook):
        found = calibrate_noise(accountant, lambda z: training_event(problem, {**point, "noise": z}, n), epsilon, delta)
        return None if found is None else ({**point, "noise": found.noise}, found.epsilon)
    answer = calibrate_hook(problem, point, n=n, epsilon=epsilon, delta=delta)
    if answer is None:
        return None
    achieved = accountant.epsilon(training_event(problem, answer, n), delta)
    if not achieved <= epsilon * (1 + 1e-9):   # NaN fails too
        raise UserError(f"The calibrate() of {problem.name}'s oracle returned {answer} for epsilon {epsilon:g} at delta "
                        f"{delta:g}, but the accountant gives its training epsilon {achieved:.6g}; make calibrate return "
                        f"a point whose event is within the target.")
    return answer, achieved


def weights(problem: Problem, model) -> dict[str, np.ndarray]:
    """The model's weights as named arrays (the oracle's `weights`, a torch module's state_dict, a
    list of arrays or tensors, or one array)."""
    target = oracle_target(problem)
    if callable(getattr(target, "weights", None)):
        named = target.weights(model)
    elif hasattr(model, "state_dict"):
        named = model.state_dict()
    elif isinstance(model, (list, tuple)):
        named = {f"layer{i}": value for i, value in enumerate(model)}
    else:
        named = {"weights": model}
    return {name: _array(value) for name, value in named.items()}


def _array(value) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)
