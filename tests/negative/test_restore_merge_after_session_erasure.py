"""A restore after an erasure files a rejection of the exact-duplicate merge its owner applied.

Finding: merge proposals are now sealed under the user's key (``_IDS_ONLY`` in ``altm/bus/sealing/_sealer.py``), so a
restore, a standby copy and a read replica open them after an erasure of a session (before, under the derived key
every erasure retires, they were skipped). But the canonical memory a merge names may be an atom of the erased
session, whose upsert is shredded: the restore cannot restore it, and the writer refuses the merge
(``merge`` -> ``target_row``: ``no canonical memory ... in scope home``, code ``unknown_target``). Only a
``SignalProposal`` or an ``EraseProposal`` refused that way is void in a restore (``_ABOUT_WHAT_WAS_SHREDDED`` in
``altm/pipeline/writer/_apply.py``); a ``MergeProposal`` is not, so ``_rejected`` files a pending rejection the owner
never had (it merged the duplicate, then the erasure released it). Each takeover of the partition files it again,
and the restored shard's review queue and state differ from the owner's and from ``altm replay``'s.

Reproduction: the user says the same preference in sessions s1 and s2 (the s2 atom is merged into the s1 atom),
then erases session s1. The proposals log is read as a restore reads it (each record opened with the current keys,
``retired=False``: ``KafkaRuntime._fetch_proposals``) and applied again (``reapplied=True``: ``WriterDriver._fill``).

Expected: a merge whose canonical (or duplicate) memory the restore could not restore because an erasure shredded it
is void there (UNCHANGED), as a signal or an erasure is: the restored shard files no rejection its owner never had.
"""

from __future__ import annotations

from altm.bus.sealing import SealedBus
from altm.core import Settings
from altm.pipeline.writer import Writer
from altm.store import ShardSet
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

PREF = "I prefer dark mode in the editor."


async def test_a_restore_does_not_refuse_a_merge_whose_canonical_atom_was_erased(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir / "owner"})
    restored = s.model_copy(update={"data_dir": settings.data_dir / "restored"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for turn in (make_turn(1, PREF, session="s1"), make_turn(2, PREF, session="s2")):
            await rt.publish([turn])
            await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE lc_state='merged'"), "no duplicate was merged"
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        owner = [str(r["reason"]) for r in rows(s.data_dir, "SELECT reason FROM rejections")]
        bus = deployment.bus
        assert isinstance(bus, SealedBus)
        raw = await bus.inner.read_all([f"{s.topic_prefix}proposals"])
        log = sorted((bus.sealer.open(r, retired=False) for r in raw), key=lambda r: (r.partition, r.offset))
        shards = ShardSet(restored.data_dir, restored.partitions)
        try:
            Writer(shards, restored, bus.sealer.keys).apply_batch(log, restored.partitions, reapplied=True)
        finally:
            shards.close()
    again = [str(r["reason"]) for r in rows(restored.data_dir, "SELECT reason FROM rejections")]
    assert not [r for r in again if "canonical memory" in r], f"the restore filed {again}; its owner filed {owner}"
