"""A restore voids a memory erasure that its owner refused, though no erasure shredded anything of it.

Finding: ``Writer._apply`` (``altm/pipeline/writer/_apply.py``, the ``reapplied and exc.code == "unknown_target"``
branch) takes *every* ``unknown_target`` refusal of a signal or an erasure applied again from the log (a restore, a
standby copy, a read replica) as void (UNCHANGED), on the assumption that the target was sealed with a key a later
erasure destroyed. It does not check that: a refusal its owner filed for another reason is dropped too. Here a user
asks to erase a message (the facade found it), and a retention pass published just before forgets it (no
tombstones): the owner applies the forget, then refuses the erasure (``no memory ... in scope``) and files a
rejection, as ``altm replay`` does from the same host records. A restore of the same proposals log refuses it for
the same reason but files nothing: the restored shard has no rejection (its review queue and the request's outcome
differ from the owner's; its state no longer equals the source's). Nothing in the log was shredded.

Expected: applied again from the log, a proposal its owner refused is refused the same way (its rejection filed
again); only a refusal caused by what the restore could not open (a target whose records were shredded: e.g. the
erasure's own ``bury`` proposals are on the log ahead, or the target is named by an erasure later in the log) is
void.
"""

from __future__ import annotations

from pathlib import Path

from altm.bus import Record
from altm.core import (
    EraseProposal,
    Erasure,
    Forget,
    ForgetProposal,
    Proposal,
    Settings,
    UpsertMemoryProposal,
    encode,
    partition_for,
)
from altm.pipeline.processors import CaptureProcessor, ProcessorContext, proposal
from altm.pipeline.writer import Writer
from altm.store import ShardSet
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TOPIC = "altm.proposals"


def _record(p: Proposal, offset: int, partitions: int) -> Record:
    return Record(TOPIC, partition_for(p.key, partitions), offset, p.key, encode(p))


async def _log(settings: Settings) -> list[Record]:
    turn = make_turn(1, "the staging database password rotates every monday")
    (message,) = await CaptureProcessor().process(turn, ProcessorContext(settings=settings))
    assert isinstance(message, UpsertMemoryProposal)
    mid = message.memory.memory_id
    forget = proposal(ForgetProposal, scope=SCOPE, processor="lifecycle", cause=turn,
                      forget=Forget(memory_ids=(mid,), reason="past retention"))
    erase = proposal(EraseProposal, scope=SCOPE, processor="control", cause=turn,
                     erasure=Erasure(target="memory", memory_id=mid))
    return [_record(p, i, settings.partitions) for i, p in enumerate([message, forget, erase])]


def _apply(settings: Settings, data_dir: Path, records: list[Record], *, reapplied: bool) -> list[str]:
    s = settings.model_copy(update={"data_dir": data_dir, "embedder": "none"})
    shards = ShardSet(s.data_dir, s.partitions)
    try:
        Writer(shards, s).apply_batch(records, s.partitions, reapplied=reapplied)
    finally:
        shards.close()
    return [str(r["reason"]) for r in rows(data_dir, "SELECT reason FROM rejections ORDER BY reason")]


async def test_a_restore_files_the_rejection_its_owner_filed(settings: Settings, tmp_path: Path) -> None:
    records = await _log(settings)
    owner = _apply(settings, tmp_path / "owner", records, reapplied=False)
    assert len(owner) == 1 and "no memory" in owner[0], owner  # the owner refused the erasure, for review
    restored = _apply(settings, tmp_path / "restored", records, reapplied=True)
    assert restored == owner, "a restore of the same log voided a rejection its owner filed (nothing was shredded)"
