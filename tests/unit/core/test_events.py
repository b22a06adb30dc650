from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from altm.core import (
    ChangeEvent,
    ChangeStatus,
    ControlAction,
    ControlEvent,
    DecodeError,
    Scope,
    TurnEvent,
    decode_event,
    encode,
)
from tests.support.turns import SCOPE, make_turn


def test_turn_roundtrip_is_byte_stable() -> None:
    turn = make_turn(1)
    data = encode(turn)
    back = decode_event(data)
    assert back == turn
    assert encode(back) == data
    assert orjson.loads(data)["schema_version"] == 1


def test_turn_event_id_is_deterministic_and_defaulted() -> None:
    a = make_turn(1)
    b = make_turn(1, content="different text")
    assert a.event_id == b.event_id  # identity: scope, session, turn id, role
    assert a.event_id != make_turn(2).event_id
    assert a.event_id.startswith("turn_")


def test_discriminated_union_picks_the_type() -> None:
    ctrl = ControlEvent(
        event_id="c1", scope=SCOPE, timestamp=datetime(2026, 1, 1, tzinfo=UTC), action=ControlAction.PIN,
        target_ids=("mem_1",),
    )
    assert isinstance(decode_event(encode(ctrl)), ControlEvent)
    change = ChangeEvent(
        event_id="x", scope=SCOPE, timestamp=datetime(2026, 1, 1, tzinfo=UTC), proposal_id="p",
        status=ChangeStatus.REJECTED, reason="why",
    )
    assert isinstance(decode_event(encode(change)), ChangeEvent)


def test_naive_timestamps_are_utc() -> None:
    turn = TurnEvent(scope=SCOPE, session_id="s", turn_id="t", role="user", content="x",
                     timestamp=datetime(2026, 1, 1, 12, 0))
    offset = turn.timestamp.utcoffset()
    assert offset is not None and offset.total_seconds() == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"event_type": "turn", "scope": {', "invalid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"event_type": "gossip"}', "unknown event_type 'gossip'"),
        (b'{"event_type": "turn", "scope": 5}', "invalid turn event"),
    ],
)
def test_decode_errors_say_why(raw: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_event(raw)


def test_wrong_types_are_named_in_the_error() -> None:
    bad = orjson.loads(encode(make_turn(1)))
    bad["role"] = "narrator"
    bad["timestamp"] = "yesterday"
    with pytest.raises(DecodeError) as info:
        decode_event(orjson.dumps(bad))
    assert "role" in str(info.value) and "timestamp" in str(info.value)


def test_unknown_fields_are_refused() -> None:
    bad = orjson.loads(encode(make_turn(1)))
    bad["colour"] = "blue"
    with pytest.raises(DecodeError, match="colour"):
        decode_event(orjson.dumps(bad))


def test_scope_parse_and_home() -> None:
    scope = Scope.parse("acme/platform/dana/coder")
    assert scope == SCOPE
    assert scope.home == "acme/platform/dana"
    with pytest.raises(ValueError, match="TENANT/WORKSPACE/USER/AGENT"):
        Scope.parse("acme/platform/dana")
    with pytest.raises(ValueError, match="invalid id"):
        Scope.parse("acme/plat form/dana/coder")


def test_scope_ids_cannot_contain_slashes() -> None:
    with pytest.raises(ValueError):
        Scope(tenant_id="a/b", workspace_id="w", user_id="u", agent_id="x")


def test_turn_requires_content_field() -> None:
    with pytest.raises(ValueError):
        TurnEvent.model_validate({"scope": SCOPE, "session_id": "s", "turn_id": "t", "role": "user",
                                  "timestamp": "2026-01-01T00:00:00Z"})
