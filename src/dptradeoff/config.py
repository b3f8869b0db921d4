"""Config validation: the schema check Snakemake runs, with errors reduced to one sentence naming the key."""
from __future__ import annotations

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
    _check_relations(config)


def _check_relations(config: dict) -> None:
    """What a schema cannot say: relations between keys."""
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
