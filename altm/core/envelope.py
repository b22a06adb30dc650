"""The envelope every event on the topics shares: schema version, event id, scope and a UTC timestamp."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from altm.core.bounds import sane_time
from altm.core.scope import Scope

SCHEMA_VERSION: Literal[1] = 1
_DIGITS = re.compile(r"\s*[+-]?[0-9]+(\.[0-9]*)?\s*")


def aware(value: datetime) -> datetime:
    """Naive timestamps are taken as UTC; everything is stored in UTC. A time whose UTC equivalent falls outside
    the years 1-9999 (e.g. 0001-01-01T00:00:00+14:00) is a validation error, not a crash."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"timestamp {value.isoformat()} is out of range in UTC") from None


class Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    event_id: str = Field(min_length=1, max_length=128)
    scope: Scope
    timestamp: datetime

    @field_validator("timestamp", mode="before")
    @classmethod
    def _not_digits(cls, value: object) -> object:
        """A string is read as ISO 8601 / RFC 3339 only: pydantic would read a string of digits as seconds since
        1970 ("20261102", a basic-form date, was stored as 1970-08-23). A JSON number is seconds since 1970."""
        if isinstance(value, str) and _DIGITS.fullmatch(value):
            raise ValueError(f"timestamp {value[:40]!r} is a string of digits: write it in ISO 8601 "
                             "(2026-11-02T09:00:00Z), or as a JSON number of seconds since 1970")
        return value

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return sane_time(aware(value))

    @property
    def key(self) -> str:
        """The partition key of every topic: the scope home."""
        return self.scope.home
