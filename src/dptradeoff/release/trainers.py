"""What a release needs of a problem's oracle beyond the study's two oracles:

    event(point, *, n) -> DpEvent        the training's privacy as an event the accountant analyses
                                          (privacy/events.py; dp_accounting's classes are the same)
    train(point, data, rng) -> model     one training on data.x_train / data.y_train
    score(model, data) -> float          the model's accuracy on data.x_test / data.y_test, in [0, 1]
    weights(model) -> dict of arrays     optional: what is saved (a torch module's state_dict by default)

The built-in DP-SGD oracles define all four (problems/builtin.py); an oracle of your own adds them.
The release recalibrates the point's `noise`, so the domain must have a `noise` parameter."""
from __future__ import annotations

import numpy as np

from .. import UserError
from ..problems.problem import Problem

REQUIRED = {"event": "event(point, *, n) returning the training's DpEvent",
            "train": "train(point, data, rng) returning the trained model",
            "score": "score(model, data) returning the model's accuracy on data.x_test/data.y_test"}


def oracle_target(problem: Problem):
    """The object whose methods the release calls: a user's oracle object, or the built-in oracle."""
    return getattr(problem.oracle, "target", problem.oracle)


def check_releasable(problem: Problem) -> None:
    """One sentence naming what the problem's oracle lacks for a release."""
    target = oracle_target(problem)
    for name, signature in REQUIRED.items():
        if not callable(getattr(target, name, None)):
            raise UserError(f"The oracle of {problem.name} has no {name}() method, which a release needs: add "
                            f"{signature} (docs/release.md).")
    if "noise" not in problem.names:
        raise UserError(f"{problem.name} has no `noise` parameter for the release to recalibrate; name the noise "
                        f"multiplier `noise` in its domain.")


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
