"""Processors are pure: ``async (event, context) -> list[proposal]`` over pydantic models (DESIGN §1.3).

No broker, runtime or vendor SDK is imported here; the context gives read access to stores and settings.
The one sink is the embed processor, which writes the vector index it is built with.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from altm.core import (
    ChangeEvent,
    ChangeMarker,
    ChangeStatus,
    Event,
    Kind,
    Layer,
    MemoryUnit,
    Method,
    Proposal,
    ProposalOp,
    Provenance,
    Scope,
    UpsertMemoryProposal,
    content_hash,
    derive_id,
    encode,
    normalise_text,
    sha256_hex,
)
from altm.core.settings import Settings
from altm.core.topics import Topic
from altm.store import MemoryReader

P = TypeVar("P", bound=Proposal)


@dataclass(frozen=True)
class ProcessorContext:
    """What a processor may use while it runs: settings and read-only, scope-filtered queries.

    Models and the vector index are given to the processors that use them when they are built (wiring),
    so a processor's method (model or rules) is fixed for its lifetime."""

    settings: Settings
    reader: MemoryReader | None = None

    def require_reader(self) -> MemoryReader:
        if self.reader is None:
            raise RuntimeError("this processor needs read access to the shards (ProcessorContext.reader)")
        return self.reader


class BatchFailure(Enum):
    """What the stage driver does when a processor's batched form fails (raises anything but a deferral)."""

    RETRY = "retry"
    """Raised: the runtime tries the whole batch again (nothing dead-lettered, nothing kept aside)."""
    DEAD_LETTER_EACH = "dead_letter_each"
    """Processed record by record, as by a processor without a batched form: the record that broke it is
    dead-lettered alone. For a batched form that needs nothing that can be away but the shard it reads (govern,
    fold): a failure there is the record's."""
    DEFER_EACH = "defer_each"
    """Processed record by record; a record that fails alone is kept as deferred work and tried again later,
    never dead-lettered. When the first record fails alone too, what the stage needs is likely away (an
    index, an endpoint): the rest are kept untried. For a stage that writes a derived store itself (embed):
    one memory that breaks it on every try no longer holds its partition back, and an outage loses nothing.
    Its retries come after later records, so such a stage writes what the shard holds then, not what the
    record carried."""


class Processor(ABC):
    name: ClassVar[str]
    input_topic: ClassVar[Topic]
    on_batch_failure: ClassVar[BatchFailure] = BatchFailure.RETRY
    """See :class:`BatchFailure`."""

    @abstractmethod
    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]: ...

    async def process_batch(
        self, events: Sequence[Event], ctx: ProcessorContext
    ) -> Sequence[Proposal] | None:
        """Optional batched form (e.g. embedding). ``None`` means: call :meth:`process` per event."""
        return None

    def forget_partitions(self, partitions: Sequence[int]) -> None:
        """``partitions`` were given up (a rebalance): what the processor remembers of them goes, for another
        process handles them now and they may come back. By default it remembers nothing."""
        return None

    @property
    def idle(self) -> bool:
        """Built without what it would work with (embed without an embedder or an index): every record it
        gets is skipped, so a runtime may leave it without a consumer."""
        return False

    def accepts(self, marker: ChangeMarker) -> bool:
        """Whether a change with this marker can matter to this processor. A change it turns down is skipped
        unopened and undecoded, so this must answer True for every change ``process`` would act on."""
        return True


def committed_upsert(marker: ChangeMarker, layers: frozenset[Layer] | None = None) -> bool:
    """The marker's change is a committed ``upsert_memory`` of one of ``layers`` (see :func:`committed_memory`)."""
    return (marker.status is ChangeStatus.COMMITTED and marker.op is ProposalOp.UPSERT_MEMORY
            and (layers is None or marker.layer in layers))


def committed_memory(event: Event, layers: frozenset[Layer] | None = None) -> MemoryUnit | None:
    """The memory a committed ``upsert_memory`` change carries, if it is of one of ``layers``."""
    if not isinstance(event, ChangeEvent) or event.status is not ChangeStatus.COMMITTED:
        return None
    if event.op is not ProposalOp.UPSERT_MEMORY or event.memory is None:
        return None
    if layers is not None and event.memory.layer not in layers:
        return None
    return event.memory


def derived_memory(
    *,
    scope: Scope,
    session_id: str | None,
    layer: Layer,
    kind: Kind,
    content: str,
    evidence: Sequence[str],
    processor: str,
    method: Method,
    id_parts: Sequence[str],
    valid_from: datetime | None,
    attributes: dict[str, Any] | None = None,
    model: str | None = None,
    prompt_hash: str | None = None,
    source_event_id: str | None = None,
    role: str | None = None,
    source_id: str | None = None,
) -> MemoryUnit:
    """A derived memory with a deterministic id and its provenance (how it was made) and, when it stands for
    what one speaker said, that speaker's ``role`` (user, assistant, tool)."""
    return MemoryUnit(
        memory_id=derive_id("mem", *id_parts),
        scope=scope,
        session_id=session_id,
        layer=layer,
        kind=kind,
        content=content,
        content_hash=content_hash(content),
        role=role,
        source_id=source_id,
        attributes=attributes or {},
        evidence=tuple(dict.fromkeys(evidence)),
        provenance=Provenance(
            method=method, processor=processor, model=model, prompt_hash=prompt_hash,
            source_event_id=source_event_id,
        ),
        valid_from=valid_from,
    )


def said_by_user(mem: MemoryUnit) -> bool:
    """The memory stands for the user's own words (derived memories from before roles were recorded count as
    the user's, as they were treated then)."""
    return mem.role in (None, "user")


def norm(text: str) -> str:
    return normalise_text(text)


def upsert_proposal(memory: MemoryUnit, *, processor: str, cause: Event, per_cause: bool = False
                    ) -> UpsertMemoryProposal:
    """A proposal with a deterministic id, timestamped with its cause (never the wall clock). The id covers the
    whole memory (evidence and attributes too): the writer applies a proposal once (a re-delivered one is the
    same decision), so two upserts of one memory that differ in anything must not share an id. ``per_cause``:
    the cause's id too, for a recomputed summary that may return to a version applied before and replaced
    since (a scene without the atom a reviewer rejected, then with it again once approved): with the payload's
    id alone, the writer would answer that return ``unchanged``."""
    once = (cause.event_id,) if per_cause else ()
    return UpsertMemoryProposal(
        event_id=derive_id("prop", processor, memory.memory_id, memory.content_hash, sha256_hex(encode(memory)),
                           *once),
        scope=memory.scope,
        timestamp=cause.timestamp,
        processor=processor,
        cause_event_id=cause.event_id,
        memory=memory,
    )


def proposal(kind: type[P], *, scope: Scope, processor: str, cause: Event, **payload: BaseModel) -> P:
    """A non-memory proposal of the ``kind`` its one payload keyword names (node, edge, verdict, supersession,
    merge, held action...); its id is derived from the op and the payload, so the same decision proposed
    twice is the same proposal."""
    (value,) = payload.values()
    op = ProposalOp(kind.model_fields["op"].default)
    return kind(
        event_id=derive_id("prop", processor, op.value, sha256_hex(encode(value))),
        scope=scope,
        timestamp=cause.timestamp,
        processor=processor,
        cause_event_id=cause.event_id,
        **payload,
    )
