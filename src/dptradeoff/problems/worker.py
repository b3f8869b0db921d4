"""A user's oracle that lives in the problem's own environment, called through a worker process.

`WorkerTarget` stands where a user's oracle object stands (`UserOracle.target`): it has exactly the
methods and attributes the user's object has, and each call runs in a worker (`worker_main.py`,
started with the environment's Python on first use, one per process, calls one at a time). Data
travel once per dataset as .npy files; a Generator travels as its PCG64 state and comes back
advanced, so a call draws from the same bit stream as in-process (only the state travels, not the
seed sequence: `rng.spawn()` in the oracle gives other children than in-process); a privacy event
comes back as its description (`privacy.descriptions`); a trained model stays in the worker, behind a
`WorkerModel`. One `WorkerTarget` (one worker) serves every problem of a process with the same
environment, oracle and options (`shared`).
An exception in the oracle's code is raised here under the same class name with its traceback as
a note, so an evaluation records it as a failed point like any other.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from .. import UserError
from .oracle import Data

WORKER = os.path.join(os.path.dirname(__file__), "worker_main.py")
ARRAYS = ("x_train", "y_train", "x_test", "y_test")
_RAISED: dict[str, type] = {}


def _raised(name: str) -> type:
    """An exception class named like the one the oracle raised in the worker."""
    if name not in _RAISED:
        _RAISED[name] = type(name, (RuntimeError,), {"__module__": "dptradeoff.problems.worker"})
    return _RAISED[name]


class WorkerModel:
    """A model trained in the worker: a handle the worker's score and weights use."""

    def __init__(self, handle: int):
        self.handle = handle


_SHARED: dict[str, "WorkerTarget"] = {}
_SHARED_LOCK = threading.Lock()


class WorkerTarget:
    """The user's oracle object in its own environment (see the module's docstring)."""

    @classmethod
    def shared(cls, python: str, spec: dict, where: str) -> "WorkerTarget":
        """The process's one worker for this environment, oracle and options (a problem is resolved
        again for every evaluation and round: each would otherwise start a worker of its own)."""
        key = json.dumps([python, spec], sort_keys=True)
        with _SHARED_LOCK:
            if key not in _SHARED:
                _SHARED[key] = cls(python, spec, where)
            return _SHARED[key]

    def __init__(self, python: str, spec: dict, where: str):
        self._python, self._spec, self._where = python, spec, where
        self._lock = threading.RLock()   # one request at a time; a data token is sent under it too
        self._process = None
        self._folder = None
        self._tokens: dict[int, tuple[Data, str]] = {}   # id(data) -> (data, its token in the worker)
        try:
            described = self._call("load", spec=spec)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"{where}: loading {spec['text']} in its own environment ({python}) failed "
                            f"({type(exc).__name__}: {exc}); fix the module, its options, or the environment's "
                            f"requirements.") from None
        self._methods = set(described["methods"])
        self._attributes = described["attributes"]

    # --- the user's object ------------------------------------------------------------------------

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._attributes:
            return self._attributes[name]
        if name in self._methods:
            return getattr(self, "_call_" + name)
        raise AttributeError(f"{self._spec['text']} has no {name}")

    def _call_epsilon(self, point, *, n, delta):
        return self._call("epsilon", point=_plain(point), n=n, delta=delta)

    def _call_epsilons(self, points, *, n, delta):
        return np.asarray(self._call("epsilons", points=np.asarray(points, dtype=float).tolist(), n=n, delta=delta),
                          dtype=float)

    def _call_utility(self, point, data, rng):
        answer = self._call("utility", point=_plain(point), token=self._token(data), state=_state(rng))
        rng.bit_generator.state = answer["state"]
        return answer["value"]

    def _call_utilities(self, point, data, repeats, rng):
        answer = self._call("utilities", point=_plain(point), token=self._token(data), repeats=int(repeats),
                            state=_state(rng))
        rng.bit_generator.state = answer["state"]
        return np.asarray(answer["values"], dtype=float)

    def _call_utility_trace(self, point, data, rng):
        answer = self._call("utility_trace", point=_plain(point), token=self._token(data), state=_state(rng))
        rng.bit_generator.state = answer["state"]
        return {k: v for k, v in answer["trace"]}

    def _call_prepare(self, data):
        folder = tempfile.mkdtemp(dir=self._scratch())
        with self._lock:
            new_token = self._new_token()
            meta = self._call("prepare", token=self._token(data), new_token=new_token, folder=folder)
            prepared = Data(*(np.load(os.path.join(folder, name + ".npy"), allow_pickle=False) for name in ARRAYS),
                            meta["source"], meta["source_label"])
            self._tokens[id(prepared)] = (prepared, new_token)
        return prepared

    def _call_trivial_utility(self, data):
        return self._call("trivial_utility", token=self._token(data))

    def _call_cost_seconds(self, point, n):
        return self._call("cost_seconds", point=_plain(point), n=n)

    def _call_event(self, point, *, n):
        from ..privacy.descriptions import event_from_description

        return event_from_description(self._call("event", point=_plain(point), n=n))

    def _call_calibrate(self, point, *, n, epsilon, delta):
        return self._call("calibrate", point=_plain(point), n=n, epsilon=float(epsilon), delta=float(delta))

    def _call_train(self, point, data, rng):
        answer = self._call("train", point=_plain(point), token=self._token(data), state=_state(rng))
        rng.bit_generator.state = answer["state"]
        return WorkerModel(answer["handle"])

    def _call_score(self, model, data):
        return self._call("score", handle=model.handle, token=self._token(data))

    def _call_losses(self, model, data):
        return np.asarray(self._call("losses", handle=model.handle, token=self._token(data)), dtype=float)

    def _call_weights(self, model):
        folder = tempfile.mkdtemp(dir=self._scratch())
        names = self._call("weights", handle=model.handle, folder=folder)
        return {name: np.load(os.path.join(folder, f"{k}.npy"), allow_pickle=False) for k, name in enumerate(names)}

    # --- the worker -------------------------------------------------------------------------------

    def _scratch(self) -> str:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="dptradeoff-worker-")
            atexit.register(shutil.rmtree, self._folder, True)
        return self._folder

    def _token(self, data: Data | None) -> str | None:
        """The worker's name for `data`, sent to it the first time (under the lock: two threads with new
        data must not get one name)."""
        if data is None:
            return None
        with self._lock:
            known = self._tokens.get(id(data))
            if known is not None and known[0] is data:
                return known[1]
            token = self._new_token()
            folder = tempfile.mkdtemp(dir=self._scratch())
            for name in ARRAYS:
                np.save(os.path.join(folder, name + ".npy"), np.asarray(getattr(data, name)), allow_pickle=False)
            self._call("put_data", token=token, folder=folder, source=data.source, source_label=data.source_label)
            shutil.rmtree(folder, ignore_errors=True)
            self._tokens[id(data)] = (data, token)
            return token

    def _new_token(self) -> str:
        self._issued = getattr(self, "_issued", 0) + 1
        return f"d{self._issued}"

    def _start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["VIRTUAL_ENV"] = os.path.dirname(os.path.dirname(self._python))
        self._process = subprocess.Popen([self._python, WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, env=env, bufsize=1)
        atexit.register(self._stop)

    def _stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()

    def _call(self, op: str, **arguments):
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                if self._process is not None and op != "load":
                    raise RuntimeError(f"the worker of {self._spec['text']} exited with code "
                                       f"{self._process.returncode}; its output is in the log above")
                self._start()
            self._process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        if not line:
            code = self._process.wait()
            raise RuntimeError(f"the worker of {self._spec['text']} ({self._python}) exited with code {code} during "
                               f"{op}; its output is in the log above")
        answer = json.loads(line)
        if "error" in answer:
            error = answer["error"]
            exc = _raised(error["type"])(error["message"])
            exc.add_note("In the problem's own environment:\n" + error["traceback"])
            raise exc
        return answer["ok"]


def _state(rng: np.random.Generator) -> dict:
    state = rng.bit_generator.state
    if state.get("bit_generator") != "PCG64":
        raise TypeError(f"an oracle in its own environment takes a PCG64 Generator, got {state.get('bit_generator')}")
    return state


def _plain(point: dict) -> dict:
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in point.items()}
