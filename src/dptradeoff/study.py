"""What a DPareto study runs on each problem, and the files that hold it: read here by the rules
(workflow/rules/common.smk) and by `dptradeoff front`, so both name the same methods and files.

A problem's chains are `problems.<name>.methods` where its entry gives them; otherwise a problem of
your own (an `oracle:` entry, or a release's tuning split of one) runs DPareto alone, and a built-in
problem runs `dpareto.methods`. Random sampling runs on every problem: its first k0 points start
every chain."""
from __future__ import annotations

from . import UserError, paths

DPARETO = paths.DPARETO
CHAIN_METHODS = (DPARETO, "optuna-tpe", "optuna-gp", "botorch", "moasha")   # the schema's enum of a chain's method


def _entry(config: dict, name: str) -> dict:
    return config.get("problems", {}).get(name, {}) or {}


def is_own_problem(config: dict, name: str) -> bool:
    """A problem defined by its config entry's `oracle:`; a release's tuning split follows the problem it splits."""
    entry = _entry(config, name)
    if "rows" in entry:
        return is_own_problem(config, entry["rows"]["of"])
    return "oracle" in entry


def problem_methods(config: dict, name: str) -> list[str]:
    """The chains the study runs on problem `name`, in the order given (each its folder's name)."""
    entry = _entry(config, name)
    if "methods" in entry:
        return list(entry["methods"])
    if "rows" in entry:
        return problem_methods(config, entry["rows"]["of"])
    if is_own_problem(config, name):
        return [DPARETO]
    return list(config["dpareto"]["methods"])


def sampling_methods(config: dict) -> list[str]:
    """The random-sampling runs of every problem: the paper's distributions, and uniform."""
    return ["random"] + (["uniform"] if config["random_sampling"].get("uniform", True) else [])


def study_methods(config: dict, problems: list[str]) -> list[str]:
    """Every chain some of `problems` runs (dpareto.methods' order, then the others'), then the sampling runs."""
    chains = [m for m in [*config["dpareto"]["methods"], *CHAIN_METHODS]
              if any(m in problem_methods(config, p) for p in problems)]
    return list(dict.fromkeys(chains)) + sampling_methods(config)


def runs_of(config: dict, name: str, run: int = 0) -> dict[str, str]:
    """{method: its evaluations file} of run `run`: the sampling runs, then the problem's chains."""
    return {m: paths.RunFiles(name, m, run).evaluations for m in sampling_methods(config) + problem_methods(config, name)}


def other_files(config: dict, name: str) -> dict[str, str]:
    """{method: evaluations file} of the problem's study beyond its runs: its grids and Table 2's sample."""
    from .stats.ttest import PAPER_TABLE2

    files = {f"grid{k}": paths.RunFiles(name, f"grid{k}").evaluations for k in _entry(config, name).get("grids", [])}
    if name in PAPER_TABLE2 and name in config["dpareto"]["problems"]:
        files["comparison"] = paths.RunFiles(name, "comparison").evaluations
    return files


def evaluation_files(config: dict, name: str, run: int = 0) -> dict[str, str]:
    """Every evaluation file of run `run` of the problem's study: sampling runs, chains, grids, Table 2's sample."""
    return {**runs_of(config, name, run), **other_files(config, name)}


def check_methods(config: dict) -> None:
    """A problem's own `methods` name DPareto: its chain answers the front queries and `dptradeoff front`."""
    for name, entry in config.get("problems", {}).items():
        methods = (entry or {}).get("methods")
        if methods is not None and DPARETO not in methods:
            raise UserError(f"problems.{name}.methods is [{', '.join(methods)}], without {DPARETO}; add {DPARETO} (its chain answers "
                            f"the front queries and `dptradeoff front`), e.g. [{', '.join([DPARETO, *methods])}].")
    running = [p for p in config["dpareto"].get("problems", []) if "moasha" in problem_methods(config, p)]
    if running and not config["dpareto"].get("traces", False):
        raise UserError(f"moasha runs on {', '.join(running)} but dpareto.traces is false; MOASHA stops trainings at the "
                        "epochs of their traces, so set dpareto.traces: true or remove moasha from the methods.")
    if running and int(config["dpareto"].get("batch_size", 1)) != 1:
        raise UserError(f"moasha runs on {', '.join(running)} with dpareto.batch_size {config['dpareto']['batch_size']}; "
                        "it trains one training at a time, so set dpareto.batch_size: 1 or remove moasha from the methods.")


def every_point(frames: dict) -> "pd.DataFrame":
    """Every evaluated point of a study once, from {method: the rows of its evaluations file}: each file's
    own rows, whose `method` is the method that found them (a chain's first k0 rows are its random run's
    and count there, unless that run is not among `frames`)."""
    import pandas as pd

    own = []
    for method, frame in frames.items():
        if "method" not in frame:
            own.append(frame.assign(method=method))
        else:
            own.append(frame[(frame["method"] == method) | ~frame["method"].isin(list(frames))])
    return pd.concat(own, ignore_index=True) if own else pd.DataFrame()
