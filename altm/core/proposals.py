"""Proposals: processors' requests to change memory state, which only the writer applies (DESIGN §1.2).

One class per ``op``, each with its own payload, sharing the :class:`Proposal` envelope; :data:`ProposalEvent`
is their union, discriminated by ``op``. On the wire a proposal carries its own payload slot only. Records
written by ALTM 0.1 named every slot, the unused ones ``null``: they are still read (the nulls are dropped).
"""

from __future__ import annotations

from abc import abstractmethod
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic.config import JsonDict

from altm.core.cycle import RuntimeCycle
from altm.core.envelope import Envelope
from altm.core.governance import (
    Burial,
    Erasure,
    Forget,
    HeldAction,
    LifecycleSignal,
    Merge,
    ReviewDecision,
    Rollback,
    Supersession,
    TrustVerdict,
)
from altm.core.graph import GraphEdge, GraphNode, MemoryLinks
from altm.core.memory import MemoryUnit


class ProposalOp(StrEnum):
    UPSERT_MEMORY = "upsert_memory"
    UPSERT_NODE = "upsert_node"
    UPSERT_EDGE = "upsert_edge"
    LINK_MEMORY = "link_memory"
    SET_TRUST = "set_trust"
    SUPERSEDE = "supersede"
    MERGE = "merge"
    HOLD_ACTION = "hold_action"
    ERASE = "erase"
    REVIEW = "review"
    SIGNAL = "signal"
    FORGET = "forget"
    ROLLBACK = "rollback"
    RECORD_CYCLE = "record_cycle"
    BURY = "bury"


PAYLOAD_SLOTS: dict[ProposalOp, str] = {
    ProposalOp.UPSERT_MEMORY: "memory",
    ProposalOp.UPSERT_NODE: "node",
    ProposalOp.UPSERT_EDGE: "edge",
    ProposalOp.LINK_MEMORY: "links",
    ProposalOp.SET_TRUST: "verdict",
    ProposalOp.SUPERSEDE: "supersession",
    ProposalOp.MERGE: "merge",
    ProposalOp.HOLD_ACTION: "held",
    ProposalOp.ERASE: "erasure",
    ProposalOp.REVIEW: "review",
    ProposalOp.SIGNAL: "signal",
    ProposalOp.FORGET: "forget",
    ProposalOp.ROLLBACK: "rollback",
    ProposalOp.RECORD_CYCLE: "cycle",
    ProposalOp.BURY: "burial",
}
"""The payload field each op carries: the wire's payload slots."""

_SLOTS_EVER = frozenset({*PAYLOAD_SLOTS.values(), "deferred"})  # "deferred": a held action's slot in ALTM 0.1


def _wire_schema(schema: JsonDict, cls: type[Any]) -> None:
    """JSON Schema of one op's proposal: ``op`` is required (it picks the model)."""
    required = schema.get("required")
    if isinstance(required, list) and "op" not in required:
        required.insert(0, "op")


class Proposal(Envelope):
    """The envelope of every proposal: the processor that made it and the event that caused it."""

    model_config = ConfigDict(json_schema_extra=_wire_schema)

    event_type: Literal["proposal"] = "proposal"
    op: ProposalOp
    processor: str = Field(min_length=1, max_length=64)
    cause_event_id: str | None = None

    @property
    @abstractmethod
    def target_id(self) -> str:
        """The id of what the proposal changes (memory, node, edge, action, decision...)."""

    @model_validator(mode="before")
    @classmethod
    def _drop_empty_slots(cls, data: Any) -> Any:
        """Records of ALTM 0.1 name every payload slot, the unused ones null."""
        if isinstance(data, dict):
            own = cls.model_fields
            return {k: v for k, v in data.items() if v is not None or k in own or k not in _SLOTS_EVER}
        return data


class UpsertMemoryProposal(Proposal):
    op: Literal[ProposalOp.UPSERT_MEMORY] = ProposalOp.UPSERT_MEMORY
    memory: MemoryUnit

    @property
    def target_id(self) -> str:
        return self.memory.memory_id


class UpsertNodeProposal(Proposal):
    op: Literal[ProposalOp.UPSERT_NODE] = ProposalOp.UPSERT_NODE
    node: GraphNode

    @property
    def target_id(self) -> str:
        return self.node.node_id


class UpsertEdgeProposal(Proposal):
    op: Literal[ProposalOp.UPSERT_EDGE] = ProposalOp.UPSERT_EDGE
    edge: GraphEdge

    @property
    def target_id(self) -> str:
        return self.edge.edge_id


class LinkMemoryProposal(Proposal):
    """One memory's nodes and edges together (what ``link`` proposes; the upsert_node and upsert_edge records
    an older ``link`` wrote on the log are still applied)."""

    op: Literal[ProposalOp.LINK_MEMORY] = ProposalOp.LINK_MEMORY
    links: MemoryLinks

    @property
    def target_id(self) -> str:
        return self.links.memory_id


class SetTrustProposal(Proposal):
    op: Literal[ProposalOp.SET_TRUST] = ProposalOp.SET_TRUST
    verdict: TrustVerdict

    @property
    def target_id(self) -> str:
        return self.verdict.memory_id


class SupersedeProposal(Proposal):
    op: Literal[ProposalOp.SUPERSEDE] = ProposalOp.SUPERSEDE
    supersession: Supersession

    @property
    def target_id(self) -> str:
        return self.supersession.old_id


class MergeProposal(Proposal):
    op: Literal[ProposalOp.MERGE] = ProposalOp.MERGE
    merge: Merge

    @property
    def target_id(self) -> str:
        return self.merge.duplicate_id


class HoldActionProposal(Proposal):
    op: Literal[ProposalOp.HOLD_ACTION] = ProposalOp.HOLD_ACTION
    held: HeldAction

    @property
    def target_id(self) -> str:
        return self.held.action_id


class EraseProposal(Proposal):
    op: Literal[ProposalOp.ERASE] = ProposalOp.ERASE
    erasure: Erasure

    @property
    def target_id(self) -> str:
        return self.erasure.memory_id or self.erasure.session_id or self.scope.path


class ReviewProposal(Proposal):
    op: Literal[ProposalOp.REVIEW] = ProposalOp.REVIEW
    review: ReviewDecision

    @property
    def target_id(self) -> str:
        return self.review.item_id


class SignalProposal(Proposal):
    op: Literal[ProposalOp.SIGNAL] = ProposalOp.SIGNAL
    signal: LifecycleSignal

    @property
    def target_id(self) -> str:
        return self.signal.memory_id


class ForgetProposal(Proposal):
    op: Literal[ProposalOp.FORGET] = ProposalOp.FORGET
    forget: Forget

    @property
    def target_id(self) -> str:
        return self.forget.memory_ids[0]


class RollbackProposal(Proposal):
    op: Literal[ProposalOp.ROLLBACK] = ProposalOp.ROLLBACK
    rollback: Rollback

    @property
    def target_id(self) -> str:
        return self.rollback.decision_id


class RecordCycleProposal(Proposal):
    op: Literal[ProposalOp.RECORD_CYCLE] = ProposalOp.RECORD_CYCLE
    cycle: RuntimeCycle

    @property
    def target_id(self) -> str:
        return self.cycle.cycle_id


class BuryProposal(Proposal):
    """Made by the writer itself, after an erasure or a forget it applied: the tombstones it left (see
    :class:`Burial`). Not sealed (hashes only, like the erasure it follows), so a restore can read it."""

    op: Literal[ProposalOp.BURY] = ProposalOp.BURY
    burial: Burial

    @property
    def target_id(self) -> str:
        return self.burial.tombstones[0].memory_id


ProposalEvent = Annotated[
    UpsertMemoryProposal | UpsertNodeProposal | UpsertEdgeProposal | LinkMemoryProposal | SetTrustProposal
    | SupersedeProposal | MergeProposal | HoldActionProposal | EraseProposal | ReviewProposal | SignalProposal
    | ForgetProposal | RollbackProposal | RecordCycleProposal | BuryProposal,
    Field(discriminator="op"),
]
"""Every proposal, discriminated by ``op`` (inside :data:`altm.core.Event`, which is discriminated by
``event_type``)."""
