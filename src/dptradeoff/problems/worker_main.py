"""The worker that runs a user's oracle inside the problem's own environment (`problems.<name>.environment`).

Run as a script by that environment's Python (`problems/worker.py` starts it), so it imports nothing of
dptradeoff and needs only the standard library and numpy (whatever version the environment has). It
reads one JSON request per line on stdin and answers one JSON line on the descriptor it was given; the
oracle's own prints go to stderr, so they cannot corrupt an answer. Arrays travel as .npy files
(the format every numpy version reads), random generators as their PCG64 state, privacy events as
their class name and fields, trained models as handles into this process.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os
import sys
import traceback

import numpy as np

ARRAYS = ("x_train", "y_train", "x_test", "y_test")


@dataclasses.dataclass
class Data:
    """The same fields as dptradeoff's `Data`: what an oracle reads."""
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str
    source_label: str

    @property
    def n_train(self) -> int:
        return len(self.y_train)


def load_target(spec: dict):
    """The oracle object: a file (its directory first on sys.path, as when a script runs) or a module,
    its attribute, instantiated with the options where it is a class."""
    if spec["path"]:
        directory = os.path.dirname(spec["path"])
        if directory not in sys.path:
            sys.path.insert(0, directory)
        module_spec = importlib.util.spec_from_file_location(spec["module_name"], spec["path"])
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[spec["module_name"]] = module
        module_spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(spec["module"])
    target = getattr(module, spec["attribute"]) if spec["attribute"] else module
    if isinstance(target, type):
        target = target(**spec["options"])
    return target


def generator(state: dict) -> np.random.Generator:
    rng = np.random.Generator(np.random.PCG64())
    rng.bit_generator.state = state
    return rng


def plain(value):
    """JSON-ready: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def event_description(event):
    """A privacy event as {"event": class name, field: value, ...}, nested events likewise: dp_accounting's
    events (attrs classes), or a description the oracle already wrote as a dict."""
    if isinstance(event, dict):
        return plain(event)
    if isinstance(event, (list, tuple)):
        return [event_description(e) for e in event]
    fields = getattr(type(event), "__attrs_attrs__", None)
    if fields is None:
        return plain(event)
    # a wrapped event's field `event` is written as "inner" (dptradeoff's privacy/descriptions.py)
    return {"event": type(event).__name__,
            **{("inner" if f.name == "event" else f.name): event_description(getattr(event, f.name)) for f in fields}}


class Worker:
    METHODS = ("epsilon", "epsilons", "utility", "utilities", "utility_trace", "prepare", "trivial_utility", "cost_seconds",
               "event", "train", "score", "losses", "weights", "calibrate")
    ATTRIBUTES = ("trace_axis", "neighbouring", "uses_gpu", "thread_safe", "seedable", "utility_description")

    def __init__(self):
        self.target = None
        self.data = {}     # token -> Data
        self.models = {}   # handle -> a trained model

    def load(self, spec):
        self.target = load_target(spec)
        methods = [m for m in self.METHODS if callable(getattr(self.target, m, None))]
        if "train" in methods and "weights" not in methods:   # the model stays here: its arrays are fetched by name
            methods.append("weights")
        return {"methods": methods,
                "attributes": {a: plain(getattr(self.target, a)) for a in self.ATTRIBUTES
                               if hasattr(self.target, a) and not callable(getattr(self.target, a))}}

    def put_data(self, token, folder, source, source_label):
        arrays = {name: np.load(os.path.join(folder, name + ".npy"), allow_pickle=False) for name in ARRAYS}
        self.data[token] = Data(**arrays, source=source, source_label=source_label)
        return None

    def prepare(self, token, new_token, folder):
        prepared = self.target.prepare(self.data[token])
        self.data[new_token] = prepared
        for name in ARRAYS:
            np.save(os.path.join(folder, name + ".npy"), np.asarray(getattr(prepared, name)), allow_pickle=False)
        return {"source": prepared.source, "source_label": prepared.source_label}

    def _data(self, token):
        return None if token is None else self.data[token]

    def epsilon(self, point, n, delta):
        return float(self.target.epsilon(point, n=n, delta=delta))

    def epsilons(self, points, n, delta):
        return plain(np.asarray(self.target.epsilons(np.asarray(points, dtype=float), n=n, delta=delta), dtype=float))

    def utility(self, point, token, state):
        rng = generator(state)
        value = float(self.target.utility(point, self._data(token), rng))
        return {"value": value, "state": plain(rng.bit_generator.state)}

    def utilities(self, point, token, repeats, state):
        rng = generator(state)
        values = self.target.utilities(point, self._data(token), repeats, rng)
        return {"values": plain(np.asarray(values, dtype=float)), "state": plain(rng.bit_generator.state)}

    def utility_trace(self, point, token, state):
        rng = generator(state)
        trace = self.target.utility_trace(point, self._data(token), rng)
        return {"trace": [[plain(k), plain(v)] for k, v in dict(trace).items()], "state": plain(rng.bit_generator.state)}

    def trivial_utility(self, token):
        value = self.target.trivial_utility(self._data(token))
        return None if value is None else float(value)

    def cost_seconds(self, point, n):
        value = self.target.cost_seconds(point, n)
        return None if value is None else float(value)

    def event(self, point, n):
        return event_description(self.target.event(point, n=n))

    def calibrate(self, point, n, epsilon, delta):
        point = self.target.calibrate(point, n=n, epsilon=epsilon, delta=delta)
        return None if point is None else plain(dict(point))

    def train(self, point, token, state):
        rng = generator(state)
        self.issued = getattr(self, "issued", 0) + 1
        handle = self.issued
        self.models[handle] = self.target.train(point, self._data(token), rng)
        return {"handle": handle, "state": plain(rng.bit_generator.state)}

    def score(self, handle, token):
        return float(self.target.score(self.models[handle], self._data(token)))

    def losses(self, handle, token):
        return [float(v) for v in np.asarray(self.target.losses(self.models[handle], self._data(token)), dtype=float)]

    def weights(self, handle, folder):
        model = self.models[handle]
        named = self.target.weights(model) if callable(getattr(self.target, "weights", None)) else (
            model.state_dict() if hasattr(model, "state_dict") else {"weights": model})
        names = []
        for k, (name, value) in enumerate(named.items()):
            if hasattr(value, "detach"):
                value = value.detach().cpu().numpy()
            np.save(os.path.join(folder, f"{k}.npy"), np.asarray(value), allow_pickle=False)
            names.append(str(name))
        return names

    def forget(self, handle):
        self.models.pop(handle, None)
        return None


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())   # the oracle's prints go to stderr
    sys.stdout = sys.stderr
    worker = Worker()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"ok": getattr(worker, request.pop("op"))(**request)}
        except BaseException as exc:   # the parent records or raises it; the worker goes on
            answer = {"error": {"type": type(exc).__name__, "message": str(exc),
                                "traceback": "".join(traceback.format_exception(exc))}}
        answers.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
