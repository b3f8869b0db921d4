"""Problems of your own, defined in the config: an importable oracle object and its domain.

    problems:
      my-model:
        oracle: examples/opacus_cnn.py:OpacusCNN   # or package.module:Name, or a module/file alone
        options: {train_rows: 2000}                 # keyword arguments, where Name is a class
        dataset: mnist                              # a dataset of the pipeline (or your own file's), or omit it
        delta: 1.0e-5
        utility: accuracy
        repeats: 3
        domain:
          epochs: {low: 1, high: 3, integer: true}
          noise: {low: 0.5, high: 4, log: true}
        sampling:                                   # optional; else uniform (log-uniform where log)
          noise: {kind: log_uniform, low: 0.5, high: 4}

Every mistake in such an entry is a UserError naming the key and the fix (`oracle.py` says what
an oracle must define).
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import os
import sys
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import UserError
from ..environments import find_file
from ..module_files import module_from_file
from .columns import reserved
from .oracle import Data, Oracle, replicate
from .problem import Param, Problem
from .sampling import sampler_from_config

ENTRY_KEYS = {"oracle", "options", "dataset", "delta", "utility", "domain", "sampling", "description", "repeats",
              "grids", "ranges", "queries", "utility_floor", "methods", "environment", "region", "seedable",
              "seconds"}
PARAM_KEYS = {"low", "high", "integer", "log"}


def _locate(spec: str, where: str) -> tuple[str | None, str, str]:
    """(the file's absolute path or None, the module name to give it or import, the attribute) of a spec."""
    target, _, attribute = spec.partition(":")
    if not target.endswith(".py"):
        return None, target, attribute
    path = find_file(target, where)
    name = f"dptradeoff_user_{os.path.splitext(os.path.basename(path))[0]}_{hashlib.sha1(path.encode()).hexdigest()[:8]}"
    return path, name, attribute


def load_object(spec: str, where: str) -> Any:
    """The object `spec` names: `package.module:Name`, `path/to/file.py:Name`, or a module or file
    alone (its functions are then the oracle). Files are imported once per process, their directory
    first on sys.path (as when the file runs as a script), so modules beside them import."""
    path, module_name, attribute = _locate(spec, where)
    try:
        if path is not None:
            directory = os.path.dirname(path)
            if directory not in sys.path:
                sys.path.insert(0, directory)
            module = module_from_file(module_name, path)
        else:
            module = importlib.import_module(module_name)
    except Exception as exc:
        raise UserError(f"{where}: importing {spec.partition(':')[0]} failed ({type(exc).__name__}: {exc}); fix the "
                        f"module or its name.") from None
    if not attribute:
        return module
    if not hasattr(module, attribute):
        raise UserError(f"{where}: {spec.partition(':')[0]} has no {attribute!r}; name an object it defines.")
    return getattr(module, attribute)


def _worker_target(name: str, spec: str, options: dict, environment) -> Any:
    """The oracle `spec` names, run by workers in the environment `problems.<name>.environment` describes."""
    from ..environments import ProblemEnvironment
    from .worker import WorkerTarget

    where = f"problems.{name}.environment"
    if not isinstance(environment, str) or not environment:
        raise UserError(f"{where} must be the path of a requirements file (e.g. envs/my-algorithm.txt); fix it.")
    python = ProblemEnvironment(find_file(environment, where), where).ensure()
    path, module_name, attribute = _locate(spec, f"problems.{name}.oracle")
    return WorkerTarget.shared(python, {"text": spec, "path": path, "module_name": module_name, "module": module_name,
                                 "attribute": attribute, "options": options}, f"problems.{name}.oracle")


@dataclass(frozen=True, eq=False)
class UserOracle(Oracle):
    """A user's oracle object behind the `Oracle` interface (missing pieces filled by its defaults)."""
    spec: str
    target: Any

    @property
    def neighbouring(self) -> str:
        return str(getattr(self.target, "neighbouring", "not stated by the oracle"))

    @property
    def uses_gpu(self) -> bool:
        return bool(getattr(self.target, "uses_gpu", False))

    @property
    def thread_safe(self) -> bool:
        """Only when the user's oracle says so: otherwise its calls are made one at a time."""
        return bool(getattr(self.target, "thread_safe", False))

    # `problems.<name>.seedable: false` (`user_problem` sets it): for an oracle whose code does not say so itself.
    seedable_in_config: bool = True

    @property
    def seedable(self) -> bool:
        """Whether the pipeline's `rng` seeds every random draw of the oracle: its own `seedable` (default True)
        and `problems.<name>.seedable`. False: it draws noise from a generator of its own (docs/your-algorithm.md)."""
        return bool(getattr(self.target, "seedable", True)) and self.seedable_in_config

    # The user's `trace_axis` where it is a parameter of the problem's domain (`user_problem` sets it):
    # an oracle whose axis the domain fixes (e.g. through `options`) is evaluated without traces.
    trace_axis: str | None = None

    def utility_trace(self, point, data, rng):
        return self.target.utility_trace(point, data, rng)

    @property
    def conversion(self) -> str | None:
        return getattr(self.target, "conversion", None)

    def with_accountant(self, accountant) -> "UserOracle":
        """A target that is an `Oracle` accounting with RDP (e.g. a built-in trainer used as your oracle) takes
        the config's conversion (`privacy.conversion`); any other target keeps its own epsilon."""
        if isinstance(self.target, Oracle):
            return replace(self, target=self.target.with_accountant(accountant))
        return self

    def utilities_trace(self, point, data, repeats, rng, checkpoints):
        """The target's own `utilities_trace` where it has one (e.g. a built-in trainer used as your oracle,
        which trains the replications together), else one `utility_trace` per replication."""
        own = getattr(self.target, "utilities_trace", None)
        if callable(own):
            return own(point, data, repeats, rng, checkpoints)
        return super().utilities_trace(point, data, repeats, rng, checkpoints)

    @property
    def resumable(self) -> bool:
        """Where the user's oracle says so and defines `utilities_segment` (e.g. a built-in linear trainer used as
        your oracle): its trainings continue from their saved states; otherwise they are replayed."""
        return bool(getattr(self.target, "resumable", False)) and callable(getattr(self.target, "utilities_segment", None))

    def utilities_segment(self, point, data, repeats, rng, checkpoints, state):
        return self.target.utilities_segment(point, data, repeats, rng, checkpoints, state)

    def cost_seconds(self, point, n):
        cost = getattr(self.target, "cost_seconds", None)
        return cost(point, n) if cost else None

    def prepare(self, data: Data) -> Data:
        prepare = getattr(self.target, "prepare", None)
        return prepare(data) if prepare else data

    def epsilon(self, point, *, n, delta):
        return self.target.epsilon(point, n=n, delta=delta)

    @property
    def epsilons(self):
        """The oracle's vectorised `epsilons(points, *, n, delta)` where it has one (the acquisition then
        computes every candidate's exact epsilon in one call: `bo.exact_privacy.VectorisedOracle`), else None."""
        return getattr(self.target, "epsilons", None)

    def trivial_utility(self, data):
        trivial = getattr(self.target, "trivial_utility", None)
        return trivial(data) if trivial else None

    def utilities(self, point, data, repeats, rng):
        if hasattr(self.target, "utilities"):
            return np.asarray(self.target.utilities(point, data, repeats, rng), dtype=float)
        return replicate(self.target.utility, point, data, repeats, rng)


def _oracle(name: str, entry: dict) -> UserOracle:
    where = f"problems.{name}.oracle"
    spec = entry["oracle"]
    if not isinstance(spec, str) or not spec:
        raise UserError(f"{where} must be a string such as package.module:Name or path/to/file.py:Name; fix it.")
    options = entry.get("options") or {}
    if not isinstance(options, dict):
        raise UserError(f"problems.{name}.options must be a mapping of keyword arguments; fix it.")
    if "environment" in entry:
        target = _worker_target(name, spec, options, entry["environment"])
    else:
        target = load_object(spec, where)
    if inspect.isclass(target):
        try:
            target = target(**options)
        except TypeError as exc:
            raise UserError(f"problems.{name}: {spec}({', '.join(options)}) failed ({exc}); make problems.{name}.options "
                            f"match its constructor.") from None
    elif options:
        raise UserError(f"problems.{name}.options are keyword arguments for a class, but {spec} is not a class; remove them.")
    if not callable(getattr(target, "epsilon", None)):
        raise UserError(f"{where}: {spec} has no epsilon(point, *, n, delta) method; define it (README, "
                        f"'Characterise your own algorithm').")
    if not (callable(getattr(target, "utility", None)) or callable(getattr(target, "utilities", None))):
        raise UserError(f"{where}: {spec} has neither utility(point, data, rng) nor utilities(point, data, repeats, "
                        f"rng); define one (README, 'Characterise your own algorithm').")
    return UserOracle(spec, target)


def _number(where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"{where} is {value!r}; give a finite number.")
    return float(value)


def _param(name: str, pname: str, entry) -> Param:
    where = f"problems.{name}.domain.{pname}"
    if reserved(pname):
        raise UserError(f"{where}: the name {pname!r} is a result column of the evaluation rows, which would overwrite "
                        f"it; rename the hyperparameter (e.g. {pname.strip('_')}_param) in the domain and in your "
                        f"oracle's code.")
    if not isinstance(entry, dict) or set(entry) - PARAM_KEYS or not {"low", "high"} <= set(entry):
        raise UserError(f"{where} must be a mapping with low and high (and optionally integer, log), got {entry!r}; fix it.")
    low, high = _number(f"{where}.low", entry["low"]), _number(f"{where}.high", entry["high"])
    integer, log = bool(entry.get("integer", False)), bool(entry.get("log", False))
    if not low < high:
        raise UserError(f"{where} has low = {entry['low']} >= high = {entry['high']}; make low < high.")
    if integer and not (low == round(low) and high == round(high)):
        raise UserError(f"{where} is an integer parameter with bounds {entry['low']}, {entry['high']}; give integer bounds.")
    if log and low <= 0:
        raise UserError(f"{where} is searched on a log scale but low = {entry['low']}; give a positive low or drop log.")
    return Param(pname, low, high, integer=integer, log=log)


def _traced(name: str, spec: str, oracle: UserOracle, domain: tuple[Param, ...]) -> UserOracle:
    """The oracle with its declared trace axis where the domain has that parameter: it must then be an
    integer parameter, with `utility_trace` beside it (a clear error otherwise)."""
    axis = getattr(oracle.target, "trace_axis", None)
    if axis is None or str(axis) not in [p.name for p in domain]:
        return oracle
    axis = str(axis)
    integers = [p.name for p in domain if p.integer]
    if axis not in integers:
        raise UserError(f"problems.{name}: {spec} declares trace_axis = {axis!r}, which is not an integer parameter of "
                        f"problems.{name}.domain ({', '.join(integers) or 'it has none'}); name one, or remove trace_axis.")
    if not any(callable(getattr(oracle.target, method, None)) for method in ("utility_trace", "utilities_trace")):
        raise UserError(f"problems.{name}: {spec} declares trace_axis = {axis!r} but defines no utility_trace(point, data, "
                        f"rng) -> {{{axis}: utility}}; define it (docs/your-algorithm.md, 'Epoch traces').")
    return replace(oracle, trace_axis=axis)


def _seedable(name: str, spec: str, oracle: UserOracle, entry: dict) -> UserOracle:
    """The oracle with `problems.<name>.seedable` applied: false marks an oracle as drawing its own noise;
    true cannot overrule an oracle that says `seedable = False` of itself."""
    if "seedable" not in entry:
        return oracle
    value = entry["seedable"]
    if not isinstance(value, bool):
        raise UserError(f"problems.{name}.seedable is {value!r}; give true or false.")
    if value and not oracle.seedable:
        raise UserError(f"problems.{name}.seedable is true but {spec} sets seedable = False (it draws noise from a "
                        f"generator of its own, which the pipeline's seed does not reach); remove the key.")
    return replace(oracle, seedable_in_config=value)


def user_problem(name: str, entry: dict) -> Problem:
    """The problem a config entry defines (every check raises a UserError naming the key)."""
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise UserError(f"problems.{name} has unknown key(s) {unknown}; use {', '.join(sorted(ENTRY_KEYS))}.")
    if entry.get("ranges"):
        raise UserError(f"problems.{name}.ranges narrows a built-in problem's domain; edit problems.{name}.domain instead.")
    domain_entry = entry.get("domain")
    if not isinstance(domain_entry, dict) or not domain_entry:
        raise UserError(f"problems.{name}.domain is missing or empty; give each hyperparameter's low and high.")
    domain = tuple(_param(name, pname, spec) for pname, spec in domain_entry.items())
    sampling = entry.get("sampling") or {}
    stray = sorted(set(sampling) - set(domain_entry))
    if stray:
        raise UserError(f"problems.{name}.sampling names {stray}, which are not in its domain; fix the names.")
    samplers = {pname: sampler_from_config(f"problems.{name}.sampling.{pname}", spec) for pname, spec in sampling.items()}
    dataset = entry.get("dataset")
    if dataset is not None:
        from ..data.build import SPLIT_OUTPUTS
        from ..data.catalog import CATALOG

        # a built-in dataset must have train and test files; another name is a file of your own, which the
        # config check finds under `datasets:` (config._check_problem_dataset)
        if not isinstance(dataset, str) or (dataset in CATALOG and dataset not in SPLIT_OUTPUTS):
            raise UserError(f"problems.{name}.dataset is {dataset!r}; use one of {', '.join(sorted(SPLIT_OUTPUTS))} or a "
                            f"file of your own under datasets:, or omit it and let the oracle load its own data.")
    delta = _number(f"problems.{name}.delta", entry.get("delta", 1e-5))
    if not 0 <= delta < 1:
        raise UserError(f"problems.{name}.delta is {delta}; give a delta in [0, 1).")
    oracle = _seedable(name, entry["oracle"], _traced(name, entry["oracle"], _oracle(name, entry), domain), entry)
    # what the utility measures (axis labels): the config's `utility`, else the oracle's `utility_description`
    utility = entry.get("utility", getattr(oracle.target, "utility_description", "accuracy"))
    return Problem(name=name, dataset=dataset, oracle=oracle, domain=domain, samplers=samplers,
                   delta=delta, utility=str(utility), default_repeats=1,
                   description=str(entry.get("description", entry["oracle"])))
