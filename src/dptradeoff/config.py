"""Config validation: the schema check Snakemake runs, with errors reduced to one sentence naming the key."""
from __future__ import annotations

import copy
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


# Mappings that hold one of several alternatives, whose keys differ: release.tuning is {split: f, holdout: h},
# {public: <problem>} or {private: ...}. Merged key by key, a configfile's {public: p} over the default {split: 0.2} would be
# {split: 0.2, public: p}, which names both; so each is taken whole from the last configfile (or --config
# override) that sets it (`replace_alternatives`). release.selection is not one: its one method's keys are
# always the same, so a configfile may change one of them alone.
ALTERNATIVES = (("release", "tuning"),)
_UNSET = object()


def _at(config: dict, path: tuple[str, ...]):
    for key in path:
        if not isinstance(config, dict) or key not in config:
            return _UNSET
        config = config[key]
    return config


def replace_alternatives(config: dict, layers: list[dict]) -> None:
    """Set each of ALTERNATIVES in the merged `config` to its value in the last of `layers` (the
    configfiles in order, then the command line's overrides) that sets it; untouched where none does."""
    for path in ALTERNATIVES:
        chosen = _UNSET
        for layer in layers:
            value = _at(layer, path)
            chosen = value if value is not _UNSET else chosen
        parent = _at(config, path[:-1])
        if chosen is not _UNSET and isinstance(parent, dict):
            parent[path[-1]] = copy.deepcopy(chosen)


def load(configfiles: list[str], schema_path: str = SCHEMA, overrides: dict | None = None) -> dict:
    """The config a Snakemake run with these `--configfile`s sees: config/config.yaml, each file
    merged over it in turn, then `overrides` (a command line's), each of ALTERNATIVES taken whole from
    the last of them that sets it; validated and with defaults filled."""
    from snakemake.utils import update_config

    config: dict = {}
    layers = []
    for path in [DEFAULT_CONFIG, *configfiles]:
        try:
            with open(path) as f:
                layers.append(yaml.safe_load(f) or {})
        except FileNotFoundError:
            raise UserError(f"Config file {path} does not exist; run from the project's directory or fix the path.") from None
    layers.append(overrides or {})
    for layer in layers:
        update_config(config, copy.deepcopy(layer))
    replace_alternatives(config, layers)
    check(config, schema_path)
    return config


def check(config: dict, schema_path: str) -> None:
    """Validate `config` against the schema with `snakemake.utils.validate` (which also fills defaults);
    on failure raise a UserError naming the first offending key."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    _check_dataset_names(config.get("datasets"))
    try:
        validate(config, schema_path, set_default=True)
    except WorkflowError:
        with open(schema_path) as f:
            schema = yaml.safe_load(f)
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(config), key=lambda e: len(list(e.absolute_path)), reverse=True)
        if not errors:
            raise
        raise UserError(explain(errors[0])) from None
    _check_own_datasets(config)
    _add_release_problems(config)
    _check_relations(config)


def _check_dataset_names(datasets) -> None:
    """Before the schema (whose sentences would not say it): a file of your own under a built-in dataset's
    name, or a new name without `source: file`."""
    from .data.build import OWN_SOURCE
    from .data.catalog import CATALOG

    if not isinstance(datasets, dict):
        return
    for name, entry in datasets.items():
        source = entry.get("source") if isinstance(entry, dict) else None
        if name in CATALOG and source == OWN_SOURCE:
            raise UserError(f"datasets.{name} is a file of your own under the name of the built-in dataset {name}; "
                            f"give it a name of its own (e.g. my-{name}) and use that name in problems.<name>.dataset.")
        if name not in CATALOG and source != OWN_SOURCE:
            raise UserError(f"datasets.{name} is not a built-in dataset ({', '.join(CATALOG)}); a dataset of your own "
                            f"needs source: file and a path: to its CSV or Parquet file (config/README.md).")


def _check_own_datasets(config: dict) -> None:
    """Each file of your own exists, has rows, and has the columns its entry names, numeric where they are
    features (its header and first rows are read; the build reads every row)."""
    from .data.build import catalog
    from .data.dataset import DatasetSettings
    from .data.own import FileSource, OwnFile

    for name, made in catalog(config["datasets"]).items():
        if isinstance(made, OwnFile):
            FileSource.from_settings(name, DatasetSettings.from_config(config["datasets"][name])).check()


def _check_problem_dataset(config: dict, name: str, settings: dict) -> None:
    """A problem's `dataset` is a dataset of the config with train and test files."""
    from .data.build import split_datasets

    dataset = settings.get("dataset")
    known = split_datasets(config.get("datasets", {}))
    if dataset is not None and dataset not in known:
        raise UserError(f"problems.{name}.dataset is {dataset!r}, which is not a dataset with train and test rows; use "
                        f"one of {', '.join(known)} (your own under datasets: with source: file), or omit it and let "
                        f"the oracle load its own data.")


def _check_problems(config: dict) -> None:
    """Every problem a study names is built in or defined under `problems:`, and every definition
    resolves (its oracle imports, its domain is valid, its dataset is one of the config's)."""
    from .problems import PROBLEMS, definition, resolve
    from .stats.region import region_rule

    for name, settings in config.get("problems", {}).items():
        if name not in PROBLEMS and "oracle" not in settings and "rows" not in settings:
            raise UserError(f"problems.{name} is not a built-in problem ({', '.join(PROBLEMS)}); to define a problem "
                            f"of your own give it an `oracle:` (config/README.md).")
        _check_problem_dataset(config, name, settings)
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
    from .release.settings import PublicTuning, ReleaseSettings, SubsampledTuning, derived_problem_entries

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

    # before any tuning runs: the released problem has private rows (with labels for a built-in trainer), its oracle has what a release
    # calls, and its event is analysable
    _check_problem_dataset(config, settings.problem, config.get("problems", {}).get(settings.problem, {}))
    released = resolve(settings.problem, definition(config, settings.problem))
    if released.dataset is None:
        raise UserError(f"release.problem is {settings.problem}, which has no dataset of the pipeline, so there are no "
                        f"private rows to release a model from; give problems.{settings.problem} a `dataset:` (a "
                        f"built-in one, or a file of your own under datasets:).")
    own = config.get("datasets", {}).get(released.dataset, {})
    from .release.trainers import oracle_target

    # a statistic of your own scores the features alone; the built-in trainers learn and score labels
    if getattr(oracle_target(released), "needs_labels", False) and own.get("source") == "file" and not own.get("label"):
        raise UserError(f"release.problem is {settings.problem}, whose dataset {released.dataset} has no label column, "
                        f"and its trainer learns and scores labels; give datasets.{released.dataset} a `label:`.")
    check_releasable(released)
    if isinstance(settings.tuning, SubsampledTuning) and released.oracle.neighbouring != "replace-one":
        raise UserError(f"release.tuning is private: subsampled, whose amplification (WBK19 Thm 9) is for replace-one "
                        f"neighbours, but {settings.problem}'s oracle states {released.oracle.neighbouring!r}; use "
                        f"release.tuning: {{private: prior}}.")
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
