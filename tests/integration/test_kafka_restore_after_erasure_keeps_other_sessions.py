"""A shard restored from the proposals log must equal its owner's, also after an erasure of another session.

Finding: proposals that carry no session of their own (a signal: ``compress`` from a compaction pass, ``helpful``
or ``harmful`` feedback, ``injected`` from a recall cycle; a recorded cycle; a retention ``forget``; trust
verdicts, links, merges, L3/L4 memories) are sealed with the user's per-agent "derived" key:
``altm/bus/sealing/_sealer.py:144-146`` (``owner_of``: no memory with a ``session_id`` and no ``session_id``,
so ``Owner(home, agent, DERIVED)``). Every erasure of a session, an agent or the user retires that key
(``altm/pipeline/writer/_apply.py:298``, ``self.keys.retire(scope.home, DERIVED)``: every agent of the user) and
destroys it after ``ALTM_RETIRED_KEY_GRACE_S``. A restore reads the proposals log with ``retired=False``
(``altm/pipeline/runtime/kafka/_runtime.py:466``, ``_fetch_proposals``), so from the erasure on it skips each of
those proposals as shredded (after the grace period every reader does, the key is gone). The owner applied them
before the erasure and keeps them: they are about memories the erasure did not take (another session), and
they carry ids and numbers, no erased content. Links, verdicts and facets are derived again from the changes
the restore publishes (the documented gap, README "Known gaps"), but nothing derives a compaction, a feedback, a
recall cycle or a retention pass again: they came from control events. The restored worker's memories lose
their compression level (``lc_compression``) and feedback counts (``lc_helpful``), its runtime cycles are
missing, its lifecycle signals differ (and the ``seq`` of a later pin with them); a forgotten message comes
back (``test_kafka_restore_after_erasure_keeps_a_forget.py``); ``altm.wiring.state_hash`` differs from the
owner's and from the embedded runtime's on the same input. Every takeover of the partition after any erasure
of the user does this.
(The same reading, ``retired=False``, is in a standby copy's catch-up and in the read replica,
``altm/pipeline/runtime/replica.py:127``: ``test_kafka_standby_after_erasure_keeps_other_sessions.py``,
``test_kafka_replica_after_erasure_keeps_a_forget.py``.)

Reproduction: coder says one thing in session s1 and one in s2 (dated in the past); feedback ``helpful`` on the
s1 message; a compaction pass (its L1 and L2 memories a level down); an erasure of session s2. The owner on Kafka equals
the embedded run; a worker with a fresh data dir restoring the partition lacks those ``helpful`` and
``compress`` signals (both while the retired key still exists and after it is destroyed). And in the review
queue (second test): s1 says a preference (an L4 facet), s2 is erased, then a compaction pass: its ``compress``
signal on the facet, sealed with the new key, is read by the restore, the facet (sealed before) is not, and the
refused signal is filed as a pending rejection the owner never had.

Expected: the restored shard equals the owner's (``altm.wiring.state_hash``, every state table). A record
that carries no content of the erased scope is not sealed with a key the erasure retires (e.g. signals, cycles,
forgets and other id-only proposals under the key of the memory's own session, or under the user's key as pins
are), or a restore applies what its owner applied with the keys that were current then.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from altm.core import Role, TurnEvent
from altm.wiring._adapters import resolve
from altm.wiring._worker import prepare_kafka
from tests.support.kafka_history import host_records, sealed_settings, send, worker
from tests.support.memories import store_with
from tests.support.replay import assert_same_state
from tests.support.rows import rows
from tests.support.scenarios import OLD
from tests.support.turns import SCOPE
from tests.support.workers import wait_until_idle

pytestmark = pytest.mark.kafka

KEPT = TurnEvent(scope=SCOPE, session_id="s1", turn_id="s1-t1", role=Role.USER,
                 content="The staging cluster runs on Kubernetes 1.30 in Dublin.", timestamp=OLD)
ERASED = TurnEvent(scope=SCOPE, session_id="s2", turn_id="s2-t2", role=Role.USER,
                   content="I prefer dark mode in every editor.", timestamp=OLD + timedelta(minutes=1))


def _signals(data_dir: Path) -> list[tuple[str, str, str]]:
    """The lifecycle signals of session s1's memories (the session no erasure took): layer, kind, memory."""
    found = rows(data_dir, "SELECT m.layer, s.kind, m.memory_id FROM lifecycle_signals s JOIN memories m "
                           "USING (memory_id) WHERE m.session_id='s1' ORDER BY m.layer, s.kind")
    return [(str(r["layer"]), str(r["kind"]), str(r["memory_id"])) for r in found]


@pytest.mark.parametrize("grace_s", [600.0, 0.0], ids=["key-retired", "key-destroyed"])
async def test_a_restore_after_an_erasure_keeps_the_signals_of_another_sessions_memories(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace_s: float) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 60.0)  # the order, not its bound
    source = sealed_settings(tmp_path / "source", grace_s)
    async with store_with(source, [KEPT, ERASED]) as (runtime, app):
        kept = str(rows(source.data_dir, "SELECT memory_id FROM memories WHERE session_id='s1' AND layer='L0'")[0]
                   ["memory_id"])
        await app.feedback(SCOPE, [kept], "helpful")
        await runtime.run_until_idle()
        assert await app.admin.compaction(OLD + timedelta(days=60))  # idle for 60 days: a level down
        await runtime.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s2")
        await runtime.run_until_idle()
    signals = _signals(source.data_dir)
    assert [(layer, kind) for layer, kind, _ in signals] == [("L0", "helpful"), ("L1", "compress"),
                                                            ("L2", "compress")]
    records = await host_records(source)

    prefix = f"e{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    owner = sealed_settings(tmp_path / "owner", grace_s, keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6})
    await prepare_kafka(resolve(owner))
    async with worker(owner):
        await send(kafka_bootstrap, prefix, records, source.topic_prefix, owner.data_dir)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=owner.data_dir)
    assert_same_state(source.data_dir, owner.data_dir, "on Kafka")  # holds: the owner equals the embedded run

    restored = owner.model_copy(update={"data_dir": tmp_path / "restored"})  # the partitions move to a new worker
    async with worker(restored):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=restored.data_dir)
    assert _signals(owner.data_dir) == signals
    assert _signals(restored.data_dir) == signals, (
        "the restore skipped the signals of s1's memories: sealed with the derived key the erasure of s2 retired")
    assert_same_state(owner.data_dir, restored.data_dir, "after a restore from the proposals log")



FACET = TurnEvent(scope=SCOPE, session_id="s1", turn_id="s1-t1", role=Role.USER,
                  content="I prefer dark mode in every editor.", timestamp=OLD)
OTHER = TurnEvent(scope=SCOPE, session_id="s2", turn_id="s2-t2", role=Role.USER,
                  content="The staging cluster runs on Kubernetes 1.30 in Dublin.",
                  timestamp=OLD + timedelta(minutes=1))


async def test_a_restore_files_no_rejection_of_a_signal_on_a_facet_sealed_before_an_erasure(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same skipping, seen in the review queue: a compaction pass after the erasure is sealed with the new
    derived key, so a restore reads its ``compress`` signal on the s1 facet (L4) while it skipped the facet
    itself (sealed before the erasure): the writer refuses the signal (``no signalled memory``) and files a
    pending rejection the owner never had; the facet derived again afterwards has no compression level."""
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 60.0)
    source = sealed_settings(tmp_path / "source", 600.0)
    async with store_with(source, [FACET, OTHER]) as (runtime, app):
        await app.erase(SCOPE, "session", session_id="s2")
        await runtime.run_until_idle()
        assert await app.admin.compaction(OLD + timedelta(days=60))
        await runtime.run_until_idle()
    assert rows(source.data_dir, "SELECT 1 FROM memories WHERE layer='L4' AND lc_compression=1")
    records = await host_records(source)

    prefix = f"e{uuid.uuid4().hex[:10]}."
    owner = sealed_settings(tmp_path / "owner", 600.0, keystore=tmp_path / "keys.db").model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6})
    await prepare_kafka(resolve(owner))
    async with worker(owner):
        await send(kafka_bootstrap, prefix, records, source.topic_prefix, owner.data_dir)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=owner.data_dir)
    assert_same_state(source.data_dir, owner.data_dir, "on Kafka")

    restored = owner.model_copy(update={"data_dir": tmp_path / "restored"})
    async with worker(restored):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=restored.data_dir)
    filed = rows(restored.data_dir, "SELECT memory_id, reason FROM rejections WHERE review_status='pending'")
    assert not filed, f"the restore filed rejections its owner never had: {[r['reason'] for r in filed]}"
    # the known gap (README, "Known gaps"): a facet sealed before an erasure is derived again, not restored, and
    # the use signals it had are not; everything else equals the owner's
    facet = "SELECT memory_id, content FROM memories WHERE layer='L4'"
    assert rows(owner.data_dir, facet) == rows(restored.data_dir, facet)  # derived again: the same facet
    others = "SELECT memory_id, content, lc_compression, trust_status FROM memories WHERE layer != 'L4' ORDER BY 1"
    assert rows(owner.data_dir, others) == rows(restored.data_dir, others)
