"""A shard restored from the proposals log files no rejection its owner never had after an erasure of one
memory and, later, of its session.

Finding: an erasure of one memory destroys no key (its tombstone keeps it from coming back), and its ``erase``
proposal stays readable (``altm/bus/sealing/_sealer.py:87-98``, ``_is_erasure``: erasures carry ids, no content).
A later erasure of the memory's session destroys that session's key, so a restore skips the memory's ``upsert``
as shredded (``altm/pipeline/runtime/kafka/_runtime.py:466``) but still reads the earlier ``erase`` of that memory
and applies it to a shard that never held it: the writer refuses it (``no memory ... in scope``) and files the
refusal as a pending rejection (``altm/pipeline/writer/_apply.py:256-260``, ``_rejected``: the proposal is
neither re-derived nor known as erased there). The owner applied the erasure (``committed``) and has no
rejection; the restored worker's review queue shows one, its state hash differs from the owner's and from the
embedded runtime's on the same input, and every takeover of the partition files it again. (A replay treats "a
decision about an erased memory" as void, ``unchanged`` / "was erased", README "Trust and erasure"; a restore
does not, although the later session erasure on the log says the memory is gone.)

Reproduction: coder says one thing in session s2; an erasure of its L1 memory; an erasure of session s2. The
owner on Kafka equals the embedded run; a worker with a fresh data dir restoring the partition files a pending
rejection of the memory erasure.

Expected: the restored shard equals the owner's (every state table, ``altm.wiring.state_hash``); an erasure of a
memory the restored shard cannot hold because a later erasure shredded it is void there (``unchanged``), not a
rejection.
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

ERASED = TurnEvent(scope=SCOPE, session_id="s2", turn_id="s2-t2", role=Role.USER,
                   content="I prefer dark mode in every editor.", timestamp=OLD + timedelta(minutes=1))


async def test_a_restore_files_no_rejection_of_a_memory_erasure_whose_session_was_erased_later(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 60.0)  # the order, not its bound
    source = sealed_settings(tmp_path / "source", 600.0)
    async with store_with(source, [ERASED]) as (runtime, app):
        episode = str(rows(source.data_dir, "SELECT memory_id FROM memories WHERE layer='L1'")[0]["memory_id"])
        await app.erase(SCOPE, "memory", memory_id=episode)
        await runtime.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s2")
        await runtime.run_until_idle()
    records = await host_records(source)

    prefix = f"m{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    owner = sealed_settings(tmp_path / "owner", 600.0, keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6})
    await prepare_kafka(resolve(owner))
    async with worker(owner):
        await send(kafka_bootstrap, prefix, records, source.topic_prefix, owner.data_dir)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=owner.data_dir)
    assert_same_state(source.data_dir, owner.data_dir, "on Kafka")  # holds: the owner equals the embedded run
    assert not rows(owner.data_dir, "SELECT 1 FROM rejections")

    restored = owner.model_copy(update={"data_dir": tmp_path / "restored"})  # the partitions move to a new worker
    async with worker(restored):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=restored.data_dir)
    filed = rows(restored.data_dir, "SELECT memory_id, reason FROM rejections WHERE review_status='pending'")
    assert not filed, f"the restore filed rejections its owner never had: {[r['reason'] for r in filed]}"
    assert_same_state(owner.data_dir, restored.data_dir, "after a restore from the proposals log")
