"""Privacy events written as plain data: {"event": class name, field: value, ...}. What an oracle
in its own environment sends back (`problems/worker.py`), and what any oracle's `event()` may return
instead of an event object, e.g.

    {"event": "EpsilonDpEvent", "epsilon": 0.5}
    {"event": "SelfComposedDpEvent", "inner": {"event": "LaplaceDpEvent", "noise_multiplier": 2.0}, "count": 10}

A nested event is written under "inner" where the event's own field is named `event` (a sampled or
repeated mechanism), and as a list under "events" (a composition, a random choice). The class names
are those of `privacy.events`: dp_accounting's events and this package's own."""
from __future__ import annotations

import attr

from .. import UserError
from . import events

# Fields named `event` (the wrapped event of a sampled or repeated mechanism) are written as "inner".
NESTED = "inner"


def _classes() -> dict[str, type]:
    return {name: value for name, value in vars(events).items()
            if isinstance(value, type) and issubclass(value, events.DpEvent)} | {
        name: value for name, value in vars(events._dp_event).items()
        if isinstance(value, type) and issubclass(value, events.DpEvent)}


def event_from_description(description):
    """The event a description names (an event object passes through unchanged)."""
    if isinstance(description, events.DpEvent):
        return description
    if isinstance(description, list):
        return [event_from_description(d) for d in description]
    if not isinstance(description, dict) or "event" not in description:
        raise UserError(f"An oracle's event() returned {description!r}, which is neither a privacy event nor a "
                        f"description {{'event': class name, field: value}}; return one (docs/your-algorithm.md).")
    classes = _classes()
    name = description["event"]
    if name not in classes:
        raise UserError(f"An oracle's event() names the event {name!r}, which privacy/events.py does not have; use one "
                        f"of {', '.join(sorted(classes))}.")
    fields = {("event" if key == NESTED else key): value for key, value in description.items() if key != "event"}
    fields = {key: (event_from_description(value) if isinstance(value, (dict, list)) and key in ("event", "events")
                    else value) for key, value in fields.items()}
    for field in attr.fields(classes[name]):   # a field typed as a tuple gets one (RandomChoiceDpEvent's events)
        if str(field.type).startswith("tuple") and isinstance(fields.get(field.name), list):
            fields[field.name] = tuple(fields[field.name])
    try:
        return classes[name](**fields)
    except TypeError as exc:
        raise UserError(f"An oracle's event() describes {name} with fields {sorted(fields)}, which it does not take "
                        f"({exc}); give {name}'s own fields.") from None


def event_description(event) -> dict:
    """The description of an event (the inverse of `event_from_description`)."""
    if isinstance(event, (list, tuple)):
        return [event_description(e) for e in event]
    out = {"event": type(event).__name__}
    for field in attr.fields(type(event)):
        value = getattr(event, field.name)
        key = NESTED if field.name == "event" else field.name
        out[key] = event_description(value) if isinstance(value, (events.DpEvent, list, tuple)) else value
    return out
