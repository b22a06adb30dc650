"""Found by a review of "link proposes one link_memory per memory"; each test failed before its fix: a refused link
over 64 KiB left the review queue, the node cap dropped a memory's own node and its dates, and one link record could
exceed a Kafka record."""

from __future__ import annotations

import itertools
import string
from collections.abc import Iterator

import pytest

from altm.bus import Record
from altm.core import (
    ChangeEvent,
    ChangeStatus,
    Forget,
    ForgetProposal,
    Kind,
    LinkMemoryProposal,
    MemoryUnit,
    NodeType,
    Proposal,
    ProposalOp,
    ReviewDecision,
    ReviewProposal,
    Scope,
    Settings,
    UpsertMemoryProposal,
    encode,
    partition_for,
)
from altm.core.bounds import content_over_limit
from altm.pipeline.processors import CaptureProcessor, LinkProcessor, ProcessorContext, proposal
from altm.pipeline.processors.extract import ExtractProcessor
from altm.pipeline.writer import Writer
from altm.store import MemoryReader, ReviewQueries, ShardSet
from tests.support.turns import SCOPE, T0, make_turn

N = 4
TOPIC = "altm.proposals"
KAFKA_DEFAULT_MAX = 1024 * 1024  # aiokafka's max_request_size default; the broker's message.max.bytes ~ the same


@pytest.fixture
def writer(settings: Settings) -> Iterator[Writer]:
    shards = ShardSet(settings.data_dir, N)
    yield Writer(shards, settings)
    shards.close()


class _Offsets:
    def __init__(self) -> None:
        self.n = 0

    def record(self, p: Proposal) -> Record:
        self.n += 1
        return Record(TOPIC, partition_for(p.key, N), self.n, p.key, encode(p))


def _names(n: int) -> list[str]:
    """``n`` distinct capitalised made-up names (each one a named entity for the rules)."""
    words = ("".join(c) + "ix" for c in itertools.product(string.ascii_uppercase, string.ascii_lowercase,
                                                           string.ascii_lowercase))
    return list(itertools.islice(words, n))


async def _stored(writer: Writer, offsets: _Offsets, content: str) -> ChangeEvent:
    (p,) = await CaptureProcessor().process(make_turn(1, content), ProcessorContext(settings=Settings()))
    assert isinstance(p, UpsertMemoryProposal)
    (change,) = writer.apply(offsets.record(p), N).changes
    assert change.status is ChangeStatus.COMMITTED
    return change


@pytest.mark.parametrize("entities", [3, 150])
async def test_a_rejected_link_stays_reviewable_whatever_its_size(writer: Writer, entities: int) -> None:
    """A link_memory refused by the writer (here: its memory was forgotten, without a tombstone, before the
    link was applied) is a rejection a reviewer must see and decide. The writer keeps the first 64 KiB of the
    rejected record; the review queue lists (and a review decision finds) only rejections whose payload is
    valid JSON. A per-row upsert_node/upsert_edge record was ~1 KiB; one link_memory of a message naming 150
    things is ~100 KiB, so its rejection is cut mid-JSON: it never shows in the queue and cannot be decided."""
    offsets = _Offsets()
    content = "We talked about " + ", ".join(_names(entities)) + "."
    change = await _stored(writer, offsets, content)
    ctx = ProcessorContext(settings=Settings(), reader=MemoryReader(writer.shards))
    (link,) = await LinkProcessor().process(change, ctx)
    assert isinstance(link, LinkMemoryProposal) and len(link.links.nodes) == entities
    forget = proposal(ForgetProposal, scope=SCOPE, processor="lifecycle", cause=make_turn(2, "retention"),
                      forget=Forget(memory_ids=(change.memory_id,), reason="past retention"))
    (forgotten, *_) = writer.apply(offsets.record(forget), N).changes
    assert forgotten.status is ChangeStatus.COMMITTED
    (rejected,) = writer.apply(offsets.record(link), N).changes
    assert rejected.status is ChangeStatus.REJECTED

    queue = ReviewQueries(writer.shards).queue(SCOPE)
    listed = [r for r in queue["rejections"] if r["proposal_id"] == link.event_id]
    assert listed, f"the rejected link ({len(encode(link))} bytes) is not in the review queue"
    decision = ReviewDecision(item_id=listed[0]["item_id"], decision="reject", note="noise")
    review = proposal(ReviewProposal, scope=SCOPE, processor="control", cause=make_turn(3, "review"),
                      review=decision)
    (decided,) = writer.apply(offsets.record(review), N).changes
    assert decided.status is ChangeStatus.COMMITTED, decided.reason


class _Present:
    """A reader for which every memory is still stored (link checks that before linking)."""

    def holds(self, scope: object, memory_id: str) -> bool:
        return True


def _committed(mem: MemoryUnit) -> ChangeEvent:
    return ChangeEvent(event_id=f"chg_{mem.memory_id[4:]}", scope=mem.scope, timestamp=mem.valid_from or T0,
                       proposal_id="prop_x", op=ProposalOp.UPSERT_MEMORY, status=ChangeStatus.COMMITTED,
                       memory_id=mem.memory_id, layer=mem.layer, kind=mem.kind, memory=mem)


async def test_the_node_cap_keeps_the_memorys_own_node_and_its_dates() -> None:
    """``_MAX_NODES`` (new in this commit) keeps the first 512 names in extraction order, and the decision's
    own Intent node (appended last) and every date (Time nodes, taken after the entities) come after the
    entities: a decision naming 600 systems loses exactly the nodes that stand for it. The per-row link
    linked them all; a cap should drop surplus entities, not these."""
    content = "We decided to move " + ", ".join(_names(600)) + " to Postgres on 2026-12-01."
    (up,) = await CaptureProcessor().process(make_turn(1, content), ProcessorContext(settings=Settings()))
    assert isinstance(up, UpsertMemoryProposal)
    ctx = ProcessorContext(settings=Settings(), reader=_Present())  # type: ignore[arg-type]
    atoms = [p.memory for p in await ExtractProcessor().process(_committed(up.memory), ctx)
             if isinstance(p, UpsertMemoryProposal)]
    (decision,) = [a for a in atoms if a.kind is Kind.DECISION]
    (link,) = await LinkProcessor().process(_committed(decision), ctx)
    assert isinstance(link, LinkMemoryProposal)
    types = {n.node_type for n in link.links.nodes}
    assert NodeType.INTENT in types, "the decision's own Intent node was cut by the node cap"
    assert NodeType.TIME in types, "the decision's date was cut by the node cap"


async def test_one_link_record_fits_in_a_kafka_message() -> None:
    """One message within every bound (content at ALTM_MAX_CONTENT_BYTES' default of 64 KiB, scope ids of the
    allowed 128 characters) makes a link_memory record over 1 MiB: aiokafka's default max_request_size (and
    the broker's default message.max.bytes). The producer raises MessageSizeTooLargeError in publish_many;
    the lane's handle_until_done retries that batch for ever, so the deriving lane (fold, extract, link,
    verify, govern together) of the partition stalls for every user on it. Each per-row record was ~2 KiB;
    the memory's own upsert record here is ~360 KiB."""
    scope = Scope(tenant_id="t" * 128, workspace_id="w" * 128, user_id="u" * 128, agent_id="a" * 128)
    urls: list[str] = []
    size = 0
    while size < 64 * 1024 - 200:  # ~550 URLs (link keeps 512), each with control characters (JSON: \\u0001)
        url = f"http://h{len(urls):03x}" + "\x01" * 110
        urls.append(url)
        size += len(url) + 1
    turn = make_turn(1, " ".join(urls), scope=scope)
    settings = Settings()
    assert content_over_limit(turn.content, settings.max_content_bytes) is None
    (up,) = await CaptureProcessor().process(turn, ProcessorContext(settings=settings))
    assert isinstance(up, UpsertMemoryProposal) and len(encode(up)) < KAFKA_DEFAULT_MAX
    ctx = ProcessorContext(settings=settings, reader=_Present())  # type: ignore[arg-type]
    (link,) = await LinkProcessor().process(_committed(up.memory), ctx)
    assert len(encode(link)) < KAFKA_DEFAULT_MAX, f"a link_memory record of {len(encode(link))} bytes"
