"""orjson encoding of events; decoding with clear, single-line error messages."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from altm.core.events import DeadLetter, Event

_EVENT: TypeAdapter[Event] = TypeAdapter(Event)


class DecodeError(ValueError):
    """Raised when bytes are not a valid event; the message says why, suitable for a DLQ record."""


def encode(model: BaseModel) -> bytes:
    """Canonical bytes (sorted keys) so equal events encode identically."""
    return orjson.dumps(model.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)


def to_json_obj(model: BaseModel) -> Any:
    return model.model_dump(mode="json")


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


_RENAMED_OPS = {"defer_action": ("hold_action", "deferred", "held")}
"""Proposal ops renamed since 0.1: old name → (new name, old payload slot, new payload slot)."""


def _upgraded(obj: dict[str, Any]) -> dict[str, Any]:
    """A record written by an older ALTM, in today's names (a held action was a "deferred action")."""
    renamed = _RENAMED_OPS.get(str(obj.get("op")))
    if renamed is None:
        return obj
    op, old_slot, new_slot = renamed
    out = {**obj, "op": op}
    if old_slot in out:
        out[new_slot] = out.pop(old_slot)
    return out


UNANTICIPATED_VALUE_ERRORS = (ValueError, OverflowError, RecursionError, TypeError)
"""What reading a value no validator anticipated can raise (a date that overflows, JSON nested too deep):
the record is unreadable, like one that fails validation."""


def decode_event(data: bytes | str) -> Event:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DecodeError(f"an event must be a JSON object, got {type(obj).__name__}")
    etype = obj.get("event_type")
    if etype not in ("turn", "control", "proposal", "change"):
        raise DecodeError(f"unknown event_type {etype!r}; expected one of turn, control, proposal, change")
    try:
        return _EVENT.validate_python(_upgraded(obj))
    except ValidationError as exc:
        raise DecodeError(f"invalid {etype} event: {describe_validation_error(exc)}") from None
    except UNANTICIPATED_VALUE_ERRORS as exc:
        raise DecodeError(f"invalid {etype} event: {type(exc).__name__}: {exc}") from None


def decode_dead_letter(data: bytes) -> DeadLetter:
    return DeadLetter.model_validate_json(data)
