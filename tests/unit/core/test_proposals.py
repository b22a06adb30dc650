"""Proposals: one model per op, discriminated by ``op``; each carries its own payload slot only, and records of
ALTM 0.1 (every slot named, the unused ones null; held actions called deferred actions) are still read."""

from __future__ import annotations

import typing

import orjson
import pytest

from altm.core import (
    DecodeError,
    EraseProposal,
    Erasure,
    HoldActionProposal,
    Proposal,
    ProposalEvent,
    ProposalOp,
    Scope,
    SupersedeProposal,
    Supersession,
    decode_event,
    encode,
)
from altm.core.proposals import PAYLOAD_SLOTS
from tests.support.turns import make_turn

PROPOSALS: tuple[type[Proposal], ...] = typing.get_args(typing.get_args(ProposalEvent)[0])

# Encoded by ALTM 0.1's bag-of-optional-fields ProposalEvent, which this union replaced: such records may still be
# on a log, and are read. Proposal ids are derived from the payload alone, so they did not change.
SUPERSEDE_0_1 = (
    b'{"cause_event_id":"turn_a80ae81c594a4c13640105dea9594fa2","cycle":null,"deferred":null,"edge":null,'
    b'"erasure":null,"event_id":"prop_cb69ef4eb1138cde06382ef49642f148","event_type":"proposal","forget":null,'
    b'"memory":null,"merge":null,"node":null,"op":"supersede","processor":"govern","review":null,"rollback":null,'
    b'"schema_version":1,"scope":{"agent_id":"d","tenant_id":"a","user_id":"c","workspace_id":"b"},'
    b'"signal":null,"supersession":{"new_id":"mem_y","old_id":"mem_x","reason":"r"},'
    b'"timestamp":"2026-11-02T09:01:00Z","verdict":null}'
)


def test_one_model_per_op_each_with_its_own_payload_slot() -> None:
    ops = [typing.get_args(cls.model_fields["op"].annotation)[0] for cls in PROPOSALS]
    assert sorted(ops) == sorted(ProposalOp)
    for cls, op in zip(PROPOSALS, ops, strict=True):
        assert set(cls.model_fields) - set(Proposal.model_fields) == {PAYLOAD_SLOTS[op]}, cls.__name__
    with pytest.raises(TypeError):
        Proposal(event_id="p", scope=Scope.parse("a/b/c/d"), timestamp=make_turn(1).timestamp,  # type: ignore[abstract]
                 op=ProposalOp.SUPERSEDE, processor="x")


def test_records_of_0_1_are_read_and_written_with_their_own_slot_only() -> None:
    made = SupersedeProposal(
        event_id="prop_cb69ef4eb1138cde06382ef49642f148", scope=Scope.parse("a/b/c/d"),
        timestamp=make_turn(1).timestamp, processor="govern", cause_event_id=make_turn(1).event_id,
        supersession=Supersession(old_id="mem_x", new_id="mem_y", reason="r"))
    back = decode_event(SUPERSEDE_0_1)
    assert isinstance(back, SupersedeProposal) and back == made and back.target_id == "mem_x"
    slim = {k: v for k, v in orjson.loads(SUPERSEDE_0_1).items() if v is not None}
    assert encode(made) == orjson.dumps(slim, option=orjson.OPT_SORT_KEYS)  # the same bytes less the null slots


def test_a_held_action_written_as_a_deferred_action_by_0_1_is_read() -> None:
    old = {"event_type": "proposal", "schema_version": 1, "event_id": "prop_1", "op": "defer_action",
           "processor": "govern", "scope": {"tenant_id": "a", "workspace_id": "b", "user_id": "c", "agent_id": "d"},
           "timestamp": "2026-11-02T09:01:00Z", "memory": None,
           "deferred": {"action_id": "act_1", "action": "supersede", "target_ids": ["mem_x", "mem_y"],
                        "reason": "needs review", "inputs": {}}}
    back = decode_event(orjson.dumps(old))
    assert isinstance(back, HoldActionProposal) and back.held.action_id == "act_1" and back.target_id == "act_1"
    change = {"event_type": "change", "schema_version": 1, "event_id": "chg_1", "scope": old["scope"],
              "timestamp": old["timestamp"], "proposal_id": "prop_1", "op": "defer_action", "status": "committed"}
    assert decode_event(orjson.dumps(change)).op is ProposalOp.HOLD_ACTION  # type: ignore[union-attr]


def test_every_op_round_trips_with_its_own_slot_only() -> None:
    erase = EraseProposal(event_id="p1", scope=Scope.parse("a/b/c/d"), timestamp=make_turn(1).timestamp,
                          processor="control", erasure=Erasure(target="session", session_id="s1"))
    data = encode(erase)
    assert [slot for slot in PAYLOAD_SLOTS.values() if f'"{slot}":'.encode() in data] == ["erasure"]
    back = decode_event(data)
    assert type(back) is EraseProposal and encode(back) == data and back.target_id == "s1"


def test_a_proposal_carries_exactly_its_own_payload() -> None:
    wire = orjson.loads(SUPERSEDE_0_1)
    with pytest.raises(DecodeError, match="merge"):  # a second payload
        decode_event(orjson.dumps({**wire, "merge": {"canonical_id": "a", "duplicate_id": "b", "reason": "r"}}))
    with pytest.raises(DecodeError, match="supersession"):  # its own payload missing
        decode_event(orjson.dumps({**wire, "supersession": None}))
    with pytest.raises(DecodeError, match="invalid proposal event"):  # an op nobody knows
        decode_event(orjson.dumps({**wire, "op": "teleport"}))
    slim = {k: v for k, v in wire.items() if v is not None}  # the null slots may be left out (they are now)
    assert encode(decode_event(orjson.dumps(slim))) == encode(decode_event(SUPERSEDE_0_1)) == orjson.dumps(
        slim, option=orjson.OPT_SORT_KEYS)
