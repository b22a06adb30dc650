"""Proposals: one model per op, discriminated by ``op``, on the same wire format as before the union."""

from __future__ import annotations

import typing

import orjson
import pytest

from altm.core import (
    DecodeError,
    EraseProposal,
    Erasure,
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

# Encoded by the bag-of-optional-fields ProposalEvent this union replaced (its id derived by ``proposal()``): the
# bytes must not change, proposal ids and state hashes are derived from them.
SUPERSEDE_WIRE = (
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


def test_the_wire_format_is_that_of_the_bag_it_replaced() -> None:
    made = SupersedeProposal(
        event_id="prop_cb69ef4eb1138cde06382ef49642f148", scope=Scope.parse("a/b/c/d"),
        timestamp=make_turn(1).timestamp, processor="govern", cause_event_id=make_turn(1).event_id,
        supersession=Supersession(old_id="mem_x", new_id="mem_y", reason="r"))
    assert encode(made) == SUPERSEDE_WIRE
    back = decode_event(SUPERSEDE_WIRE)
    assert isinstance(back, SupersedeProposal) and back == made and back.target_id == "mem_x"


def test_every_payload_slot_is_on_the_wire_and_round_trips() -> None:
    erase = EraseProposal(event_id="p1", scope=Scope.parse("a/b/c/d"), timestamp=make_turn(1).timestamp,
                          processor="control", erasure=Erasure(target="session", session_id="s1"))
    data = encode(erase)
    assert all(f'"{slot}":'.encode() in data for slot in PAYLOAD_SLOTS.values())
    back = decode_event(data)
    assert type(back) is EraseProposal and encode(back) == data and back.target_id == "s1"


def test_a_proposal_carries_exactly_its_own_payload() -> None:
    wire = orjson.loads(SUPERSEDE_WIRE)
    with pytest.raises(DecodeError, match="merge"):  # a second payload
        decode_event(orjson.dumps({**wire, "merge": {"canonical_id": "a", "duplicate_id": "b", "reason": "r"}}))
    with pytest.raises(DecodeError, match="supersession"):  # its own payload missing
        decode_event(orjson.dumps({**wire, "supersession": None}))
    with pytest.raises(DecodeError, match="invalid proposal event"):  # an op nobody knows
        decode_event(orjson.dumps({**wire, "op": "teleport"}))
    slim = {k: v for k, v in wire.items() if v is not None}  # the null slots may also be left out
    assert encode(decode_event(orjson.dumps(slim))) == SUPERSEDE_WIRE
