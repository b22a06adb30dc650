"""Found by a review: every control event carried its id in the clear (``altm-event-id``), and shredding left it
there; a host may choose an id that says what the event is about, and a derived one can be confirmed by a guess.
Only a retention or compaction pass carries a ref now (what a replay needs, ``altm.core.event_ref``), a hash."""

from __future__ import annotations

from datetime import UTC, datetime

from altm.bus import EVENT_REF_HEADER, host_record
from altm.core import ControlAction, ControlEvent, Settings, event_ref
from tests.support.turns import SCOPE

TS = datetime(2026, 12, 1, tzinfo=UTC)


def _headers(event: ControlEvent) -> dict[str, bytes]:
    return dict(host_record(Settings(), event).headers)


def test_only_a_lifecycle_pass_carries_a_ref_and_it_is_not_its_id() -> None:
    told = "dana: remove my divorce notes"
    pin = ControlEvent(event_id=told, scope=SCOPE, timestamp=TS, action=ControlAction.PIN, target_ids=("mem_x",),
                       payload={})
    assert EVENT_REF_HEADER not in _headers(pin)
    assert all(told.encode() not in value for value in _headers(pin).values())
    forget = ControlEvent(event_id=told, scope=SCOPE, timestamp=TS, action=ControlAction.LIFECYCLE,
                          payload={"op": "forget", "memory_ids": ["mem_x"], "reason": "past retention"})
    headers = _headers(forget)
    assert headers[EVENT_REF_HEADER] == event_ref(told).encode()
    assert all(told.encode() not in value for value in headers.values())
