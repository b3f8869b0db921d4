"""Config validation: the schema check Snakemake runs, with errors reduced to one sentence naming the key."""
from __future__ import annotations

import os

import jsonschema
import yaml

from . import UserError


def _key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(top level)"


def explain(error: jsonschema.ValidationError) -> str:
    """One sentence naming the offending key and the fix."""
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = _key_path(error)
        prefix = "" if where == "(top level)" else where + "."
        return (f"Unknown config key {prefix}{extra[0]}; remove it or use one of: {', '.join(allowed)}"
                " (see config/README.md).")
    if error.validator == "required":
        return f"Config is missing {error.message.split(' is a required property')[0]} under {_key_path(error)}; add it (see config/README.md)."
    return f"Config key {_key_path(error)} is invalid: {error.message}; fix its value (see config/README.md)."


SCHEMA = os.path.join(os.path.dirname(__file__), "..", "..", "workflow", "schemas", "config.schema.yaml")
DEFAULT_CONFIG = "config/config.yaml"


def load(configfiles: list[str], schema_path: str = SCHEMA, overrides: dict | None = None) -> dict:
    """The config a Snakemake run with these `--configfile`s sees: config/config.yaml, each file
    merged over it in turn, then `overrides` (a command line's), validated and with defaults filled."""
    from snakemake.utils import update_config

    config: dict = {}
    for path in [DEFAULT_CONFIG, *configfiles]:
        try:
            with open(path) as f:
                update_config(config, yaml.safe_load(f) or {})
        except FileNotFoundError:
            raise UserError(f"Config file {path} does not exist; run from the project's directory or fix the path.") from None
    update_config(config, overrides or {})
    check(config, schema_path)
    return config


def check(config: dict, schema_path: str) -> None:
    """Validate `config` against the schema with `snakemake.utils.validate` (which also fills defaults);
    on failure raise a UserError naming the first offending key."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    try:
        validate(config, schema_path, set_default=True)
    except WorkflowError:
        with open(schema_path) as f:
            schema = yaml.safe_load(f)
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(config), key=lambda e: len(list(e.absolute_path)), reverse=True)
        if not errors:
            raise
        raise UserError(explain(errors[0])) from None
    _add_release_problems(config)
    _check_relations(config)


def _check_problems(config: dict) -> None:
    """Every problem a study names is built in or defined under `problems:`, and every definition
    resolves (its oracle imports, its domain is valid)."""
    from .problems import PROBLEMS, definition, resolve
    from .stats.region import region_rule

    for name, settings in config.get("problems", {}).items():
        if name not in PROBLEMS and "oracle" not in settings and "rows" not in settings:
            raise UserError(f"problems.{name} is not a built-in problem ({', '.join(PROBLEMS)}); to define a problem "
                            f"of your own give it an `oracle:` (config/README.md).")
        resolve(name, definition(config, name))
        try:
            region_rule(settings, tuple(config.get("statistics", {}).get("region", (0.01, 10))), "oracle" in settings)
        except UserError as exc:
            raise UserError(f"problems.{name}.{exc}") from None
    for name in config.get("dpareto", {}).get("problems", []):
        if name not in PROBLEMS and "oracle" not in config.get("problems", {}).get(name, {}):
            raise UserError(f"dpareto.problems names {name!r}, which is neither built in ({', '.join(PROBLEMS)}) nor "
                            f"defined under problems.{name}; define it there or fix the name.")


def _add_release_problems(config: dict) -> None:
    """The release's tuning problem (`<problem>-tuning`, the problem on its tuning split) joins
    `problems:`, so every DPareto rule can characterise its front; and the release's names are checked."""
    from .problems import PROBLEMS
    from .release.settings import PublicTuning, ReleaseSettings, derived_problem_entries

    if "release" not in config:
        return
    settings = ReleaseSettings.from_config(config)
    for key, name in (("release.problem", settings.problem), ("release.tuning.public", settings.tuning_problem)):
        if name not in PROBLEMS and "oracle" not in config.get("problems", {}).get(name, {}):
            raise UserError(f"{key} names {name!r}, which is neither built in ({', '.join(PROBLEMS)}) nor defined "
                            f"under problems.{name}; define it there or fix the name.")
        if not isinstance(settings.tuning, PublicTuning):
            break
    from .problems import definition, resolve
    from .release.trainers import check_releasable

    # before any tuning runs: the released problem's oracle has what a release calls, and its event is analysable
    check_releasable(resolve(settings.problem, definition(config, settings.problem)))
    if isinstance(settings.tuning, PublicTuning):
        released, public = (resolve(name, definition(config, name)).dataset
                            for name in (settings.problem, settings.tuning_problem))
        if released is not None and released == public:
            raise UserError(f"release.tuning.public is {settings.tuning_problem}, which trains on {public}, the dataset "
                            f"{settings.problem} releases from; tune on data you declare public, or use "
                            f"release.tuning: {{split: 0.2}}.")
    config.setdefault("problems", {}).update(derived_problem_entries(config))


def _check_dpareto(dpareto: dict) -> None:
    """The paper's HVPoI exists only in the paper's algorithm (both objectives learned by GPs)."""
    paired = {"privacy_model": "gp", "utility_noise": "learned", "utility_cap": "none"}
    other = {key: dpareto[key] for key, value in paired.items() if dpareto.get(key, value) != value}
    if dpareto.get("acquisition", "hvpoi") == "hvpoi" and other:
        raise UserError(f"Config key dpareto.acquisition is hvpoi, the paper's HVPoI, which runs only with "
                        f"privacy_model: gp, utility_noise: learned and utility_cap: none (given: {other}); set "
                        f"those, or choose acquisition hvpoi-region, ehvi or ehvi-logit.")


def _check_sampling(config: dict) -> None:
    """DPareto's initial points are the first points of the random run, so the run must have them."""
    points, initial = config["random_sampling"]["points"], config["dpareto"]["initial_points"]
    if points < initial:
        raise UserError(f"random_sampling.points ({points}) is smaller than dpareto.initial_points ({initial}); the "
                        f"initial points are the first points of the random run, so raise random_sampling.points.")


def _check_relations(config: dict) -> None:
    """What a schema cannot say: relations between keys."""
    from .study import check_methods

    _check_problems(config)
    check_methods(config)
    _check_dpareto(config.get("dpareto", {}))
    table3 = config.get("expost", {}).get("table3")
    if table3:
        grid_eps = set(float(e) for e in table3["grid"]["eps"])
        missing = [b for b in table3["doubling"]["budgets"] if float(b) not in grid_eps]
        if missing:
            raise UserError(f"Config key expost.table3.doubling.budgets has {missing}, which are not in "
                            f"expost.table3.grid.eps; add them to the grid or remove them from the budgets.")
    taylor = config.get("taylor")
    if taylor:
        missing = [m for m in taylor["fig1_measuring"] if float(m) not in set(map(float, taylor["measuring"]))]
        if missing:
            raise UserError(f"Config key taylor.fig1_measuring has {missing}, which are not in taylor.measuring; "
                            f"add them to taylor.measuring.")
        names = [r["name"] for r in taylor["readings"]]
        if len(set(names)) < len(names):
            raise UserError(f"Config key taylor.readings names a reading twice ({names}); give each its own name.")
        if taylor["fig2"]["reading"] not in names:
            raise UserError(f"Config key taylor.fig2.reading is {taylor['fig2']['reading']!r}, which is not a name in "
                            f"taylor.readings ({', '.join(names)}).")
        outside = [d for d in taylor["fig2"]["datasets"] if d not in taylor["datasets"]]
        if outside:
            raise UserError(f"Config key taylor.fig2.datasets has {outside}, which are not in taylor.datasets (Fig. 2 "
                            f"uses Table 1's best measuring point); add them there.")
    _check_sampling(config)
