"""What is derived from a restore's re-derivation is marked too (``altm-rederived`` one generation further).

A restore publishes its changes again marked ``altm-rederived``; a stage carries the mark onto what it proposes
from them, and the writer takes a refusal of such a proposal as void (its owner derived the same first). When the
new owner's writer committed such a proposal, the change it published was not marked, so what the next stage
derived from it (a facet from a re-derived atom) and the writer refused was filed as a rejection the owner never
had. The writer now carries the mark from a proposal to its changes.
"""

from __future__ import annotations

from altm.bus import Record, unpack_headers
from altm.core import Settings, Topic, encode, partition_for, topic_name
from altm.pipeline.processors import CaptureProcessor, ProcessorContext
from altm.pipeline.writer import REDERIVED_HEADER, Writer, is_rederived
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


async def test_a_change_of_a_rederived_proposal_is_marked(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "The release is on Friday.")]) as (rt, _app):
        ctx = ProcessorContext(settings=s)
        (proposal,) = await CaptureProcessor().process(make_turn(2, "The release moved to Monday."), ctx)
        partition = partition_for(SCOPE.home, s.partitions)
        shard = rt.shards.get(partition)
        before = {seq for seq, *_ in shard.pending_outbox()}
        record = Record(topic_name(Topic.PROPOSALS, s.topic_prefix), partition, 10_000, proposal.key,
                        encode(proposal), headers=((REDERIVED_HEADER, b"1"),))
        (outcome,) = Writer(rt.shards, s).apply_batch([record], s.partitions)
        assert outcome.changes
        rows = [r for r in shard.pending_outbox() if r[0] not in before and r[1] == Topic.CHANGES.value]
    assert rows and all(is_rederived(unpack_headers(r[4])) for r in rows), "its change is not marked re-derived"
