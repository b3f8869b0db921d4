"""`dptradeoff audit`: audited lower bounds on epsilon beside the proven ones, for a problem's front points
(those of every point its study evaluated) or given hyperparameters (audit.study, docs/audit.md)."""
from __future__ import annotations

import dataclasses
import math

from .. import UserError
from ..audit.study import AuditSettings, audit_study, table_note, violation
from ..config import load
from ..problems import definition, resolve
from ..problems.evaluate import load_data
from ..problems.tables import read_frame
from ..seeds import rng
from ..privacy.accountant import accounting_name
from .front import load_study


def parse_point(items: list[str]) -> dict:
    """name=value pairs as a point (numbers as numbers)."""
    point = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"--point takes name=value pairs, got {item!r}; write e.g. --point epochs=4 lot_size=256.")
        try:
            point[name] = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            raise UserError(f"--point {item!r}: {value!r} is not a number; give every hyperparameter a number.") from None
    return point


def audit_command(args) -> None:
    from ..plots.audit import audit_figure
    from ..stats.tables import write

    config = load(args.configfile)
    problem = resolve(args.problem, definition(config, args.problem), accounting_name(config["privacy"]))
    settings = AuditSettings.from_config(config)
    changes = {k: v for k, v in (("runs", args.runs), ("front_points", args.front_points)) if v is not None}
    given = [parse_point(args.point)] if args.point else config.get("audit", {}).get("points", {}).get(args.problem, [])
    if args.point and args.front_points is None:
        changes["front_points"] = 0          # the given point alone, unless front points are asked for too
    settings = dataclasses.replace(settings, **changes)
    frames, missing = load_study(config, args.problem, 0) if settings.front_points else ({}, [])
    if missing and frames:
        print(f"Not built, left out: {', '.join(missing)}.")
    seed = config["seed"] if args.seed is None else args.seed
    table, utilities = audit_study(problem, frames, given, load_data(problem), rng(seed, args.problem, "audit"), settings)
    label = f"dptradeoff audit --problem {args.problem}"
    warning = violation(args.problem, table)
    if warning:
        print(warning)
    shown = table.drop(columns=["detail"])
    print(f"Audit of {args.problem} (epsilon: proven, the accountant's upper bound; epsilon_lb: audited lower bound "
          f"at {settings.confidence:.0%} confidence, a measurement, not a guarantee):")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}" if math.isfinite(v) else str(v)))
    for k, row in table.iterrows():
        print(f"  point {k}: {row['audit']}; {row['detail']}")
    if args.out:
        write(table, f"{args.out}.csv", f"{args.out}.md", table_note(args.problem, table, label))
        audit_figure(args.problem, table, utilities, f"{args.out}.pdf", label, [], warning)
        print(f"files: {args.out}.csv, {args.out}.md, {args.out}.pdf")
