"""The built-in problems (paper 001 Table 1 domains, Tables 3-4 distributions), and `resolve`:
a problem by name, built-in or defined in the config's `problems:` section."""
from __future__ import annotations

from .. import UserError
from .builtin import BoltOnOutputPerturbation, LinearDPSGD, MLPDPSGD, SparseVector
from .problem import Param, Problem
from .sampling import NormalInt, ShiftedExponential, UniformInt


def _dpsgd(name, dataset, oracle, epochs, lot, lr, noise, clip, samplers, description):
    return Problem(
        name=name, dataset=dataset, oracle=oracle,
        domain=(Param("epochs", *epochs, integer=True), Param("lot_size", *lot, integer=True),
                Param("learning_rate", *lr, log=True), Param("noise", *noise, log=True),
                Param("clip", *clip, log=True)),
        samplers=samplers, delta=1e-5, description=description,
    )


# Paper 001 Table 4 (adult) and Table 3 (mnist), each truncated to [low, high].
ADULT_SAMPLERS = {
    "epochs": UniformInt(1, 64, a=1, b=64),
    "lot_size": NormalInt(8, 512, mean=128, sd=64),
    "learning_rate": ShiftedExponential(1e-3, 1e-1, rate=10, shift=1e-3),
    "noise": ShiftedExponential(1e-1, 16, rate=1e-1, shift=1e-1),
    "clip": ShiftedExponential(1e-1, 4, rate=1e-1, shift=1e-1),
}
MNIST_SAMPLERS = {
    "epochs": UniformInt(1, 400, a=1, b=400),
    "lot_size": NormalInt(16, 4000, mean=800, sd=800),
    "learning_rate": ShiftedExponential(1e-3, 5e-1, rate=10, shift=1e-3),
    "noise": ShiftedExponential(1e-1, 16, rate=5e-1, shift=1e-1),
    "clip": ShiftedExponential(1e-1, 12, rate=5e-1, shift=1e-1),
}
ADULT_DOMAIN = dict(epochs=(1, 64), lot=(8, 512), lr=(5e-4, 5e-2), noise=(0.1, 16), clip=(0.1, 4))
MNIST_DOMAIN = dict(epochs=(1, 400), lot=(16, 4000), lr=(1e-3, 5e-1), noise=(0.1, 16), clip=(0.1, 12))

PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in [
        _dpsgd("adult-logreg-sgd", "adult", LinearDPSGD("sgd", loss="logistic"), samplers=ADULT_SAMPLERS,
               description="logistic regression, DP-SGD", **ADULT_DOMAIN),
        _dpsgd("adult-logreg-adam", "adult", LinearDPSGD("adam", loss="logistic"), samplers=ADULT_SAMPLERS,
               description="logistic regression, DP-Adam", **ADULT_DOMAIN),
        _dpsgd("adult-svm-sgd", "adult", LinearDPSGD("sgd", loss="hinge"), samplers=ADULT_SAMPLERS,
               description="linear SVM, DP-SGD", **ADULT_DOMAIN),
        _dpsgd("mnist-mlp1-sgd", "mnist", MLPDPSGD("sgd", architecture="mlp1"), samplers=MNIST_SAMPLERS,
               description="MLP1, DP-SGD", **MNIST_DOMAIN),
        _dpsgd("mnist-mlp2-sgd", "mnist", MLPDPSGD("sgd", architecture="mlp2"), samplers=MNIST_SAMPLERS,
               description="MLP2, DP-SGD", **MNIST_DOMAIN),
        Problem("adult-logreg-outpert", "adult", BoltOnOutputPerturbation(),
                domain=(Param("gamma", 1e-4, 1.0, log=True), Param("sigma", 0.1, 10.0, log=True)),
                delta=1e-6, default_repeats=50, description="output-perturbation logistic regression"),
        Problem("svt", None, SparseVector(),
                domain=(Param("bound", 1, 30, integer=True), Param("b", 1e-2, 1e2, log=True)),
                delta=0.0, utility="F1", default_repeats=50, description="sparse vector technique"),
    ]
}

# The keys of a `problems.<name>` config entry that define a problem (the others, repeats and
# grids, say how a study uses it).
DEFINITION_KEYS = ("ranges", "oracle", "options", "dataset", "delta", "utility", "domain", "sampling", "description",
                   "environment", "seedable",
                   "rows")


def definition(config: dict, name: str) -> dict:
    """The keys of the config's `problems.<name>` entry that define the problem (not how it is studied)."""
    settings = config.get("problems", {}).get(name, {})
    return {key: settings[key] for key in DEFINITION_KEYS if key in settings}


def get_problem(name: str, overrides: dict | None = None) -> Problem:
    """A built-in problem, its ranges narrowed by `overrides`."""
    if name not in PROBLEMS:
        raise UserError(f"Unknown problem {name!r}; the built-in problems are {', '.join(PROBLEMS)}, and a problem "
                        f"of your own needs an `oracle:` entry under problems.{name} (config/README.md).")
    problem = PROBLEMS[name]
    return problem.restricted(overrides) if overrides else problem


def resolve(name: str, definition: dict | None = None, conversion: str = "pld") -> Problem:
    """The problem `name` as its config entry defines it: a built-in narrowed by `ranges`, or, where
    the entry names an `oracle`, the user-defined problem it describes (`problems.user`)."""
    definition = definition or {}
    if "rows" in definition:   # a release's tuning split: the problem `rows.of`, on part of its rows
        from .rows import RowSplit

        rows = definition["rows"]
        whole = resolve(rows["of"], {k: v for k, v in definition.items() if k != "rows"}, conversion)
        return whole.on_rows(name, RowSplit.from_definition(rows))
    if "oracle" in definition:
        from .user import user_problem

        problem = user_problem(name, definition)
    else:
        extra = sorted(set(definition) - {"ranges", "description"})
        if extra:
            raise UserError(f"problems.{name} sets {extra}, which only a problem of your own takes; add an `oracle:` "
                            f"entry (config/README.md) or remove them.")
        problem = get_problem(name, definition.get("ranges"))
    return problem.with_conversion(conversion)
