"""A host record that carries ``altm-rederived`` makes the writer void the refusal of what is derived from it.

Finding: ``run_records`` (``altm/pipeline/_drivers.py``, ``_rederived``) carries ``REDERIVED_HEADER`` from *any*
record a stage reads onto what it proposes, host records of the turns and control topics included, although the
header is only ever set by the writer on the changes a restore republishes. A host producer (anyone who may write
to the turns topic) that puts ``altm-rederived`` on a turn makes every refusal of what the stages derive from it
"void" (``Writer``: ``derived again in a restore and refused``): nothing is filed for review, where the same turn
without the header files a rejection. ``_lineage`` right beside it already refuses to take what a host put in its
headers ("it could make other records look erased"); the rederived marker needs the same rule.

Expected: a host record's own ``altm-rederived`` header is not carried onto proposals (only a change, on the
changes topic, marks what is derived from it), so the conflicting re-send of a turn is filed as a rejection either
way.
"""

from __future__ import annotations

from collections.abc import Sequence

from altm.bus import OutgoingRecord, Record
from altm.core import Settings, Topic, encode, partition_for, topic_name
from altm.pipeline import ProcessorContext, WriterDriver, run_records
from altm.pipeline.processors import CaptureProcessor
from altm.pipeline.writer import REDERIVED_HEADER, Writer
from altm.store import DeferredWork, ShardSet
from tests.support.rows import rows
from tests.support.turns import make_turn


def _turn_record(settings: Settings, content: str, offset: int, *, forged: bool) -> Record:
    turn = make_turn(1, content)
    headers = ((REDERIVED_HEADER, b"1"),) if forged else ()
    return Record(topic_name(Topic.TURNS, settings.topic_prefix), partition_for(turn.key, settings.partitions),
                  offset, turn.key, encode(turn), headers=headers)


def _as_read(out: OutgoingRecord, settings: Settings, offset: int) -> Record:
    assert out.key is not None
    return Record(out.topic, partition_for(out.key, settings.partitions), offset, out.key, out.value,
                  headers=out.headers)


async def test_a_host_turn_cannot_mark_its_proposals_rederived(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    ctx = ProcessorContext(settings=s)
    shards = ShardSet(s.data_dir, s.partitions)
    published: list[OutgoingRecord] = []

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        published.extend(records)

    try:
        driver = WriterDriver(Writer(shards, s), DeferredWork(shards, s), publish, "sqlite:test")
        first = await run_records(CaptureProcessor(), [_turn_record(s, "we deploy on fridays", 0, forged=False)],
                                  ctx)
        # the same turn id sent again with other content (an L0 conflict), the header set by the host producer
        again = await run_records(CaptureProcessor(), [_turn_record(s, "we never deploy", 1, forged=True)], ctx)
        forged = [h for out in again.outgoing for h, _ in out.headers if h == REDERIVED_HEADER]
        assert forged == [], "a host turn's own altm-rederived header was carried onto its proposals"
        await driver.handle([_as_read(out, s, i) for i, out in enumerate([*first.outgoing, *again.outgoing])])
        assert len(rows(s.data_dir, "SELECT 1 FROM memories")) == 1
        refused = rows(s.data_dir, "SELECT reason FROM rejections")
        assert len(refused) == 1, "the conflicting re-send was voided, not filed for review"
    finally:
        shards.close()
