"""A shard restored from the proposals log must equal the shard it restores (its changelog), also after a forget.

Finding: a worker that takes a partition over restores its shard by applying the proposals log and then publishes
the changes of every proposal it applied again, "so the worker's own stages re-embed and re-derive them ... a
re-derived memory upsert is applied once, so it changes nothing" (README, Kafka runtime). After a retention pass
forgot turns, that is not so: extract and verify re-derive from the republished change of a forgotten message
(the change carries the message, the restored shard no longer holds it) and propose an atom citing it and a
trust verdict about it again. Their ids differ from nothing the owner applied, so the writer refuses them
(``evidence ... is not in this shard``, ``no verdict target``) and files each refusal as a *pending rejection*:
the restored worker's review queue shows rejections the owner never had, and its state hash differs from the
owner's (and from the embedded runtime's on the same input). Every takeover of the partition adds them again.

Expected: the restored shard equals the owner's (``altm.wiring.state_hash``, every state table); what a restore
re-derives from a memory the restored shard no longer holds is not proposed, or not filed as a rejection.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from altm.core import Settings
from altm.wiring._adapters import resolve
from altm.wiring._worker import prepare_kafka
from tests.support.kafka_history import host_records, send, worker
from tests.support.memories import store_with
from tests.support.replay import assert_same_state
from tests.support.rows import rows
from tests.support.scenarios import OLD, first_turns
from tests.support.workers import wait_until_idle

pytestmark = pytest.mark.kafka


def _settings(data_dir: Path, *, keystore: Path | None = None) -> Settings:
    return Settings(data_dir=data_dir, partitions=4, embedder="none", retention_days_l0=30.0,
                    retention_days_l2=30.0, retired_key_grace_s=0.0, seal_log=keystore is not None,
                    keystore=f"sqlite:///{keystore}" if keystore is not None else None)


async def test_a_restored_shard_files_no_rejections_its_owner_never_had_after_a_retention_pass(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 60.0)  # the order, not its bound
    source = _settings(tmp_path / "source")
    async with store_with(source, first_turns(3)) as (runtime, app):  # turns with atoms, dated OLD
        await app.admin.retention(OLD + timedelta(days=400))  # forgets the messages (and what only they made)
        await runtime.run_until_idle()
    records = await host_records(source)

    prefix = f"f{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    owner = _settings(tmp_path / "owner", keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6})
    await prepare_kafka(resolve(owner))
    await send(kafka_bootstrap, prefix, records, source.topic_prefix)
    async with worker(owner):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=owner.data_dir)
    assert_same_state(source.data_dir, owner.data_dir, "on Kafka")  # holds: the owner equals the embedded run
    assert not rows(owner.data_dir, "SELECT 1 FROM rejections WHERE review_status='pending'")

    restored = owner.model_copy(update={"data_dir": tmp_path / "restored"})  # the partitions move to a new worker
    async with worker(restored):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=restored.data_dir)
    filed = rows(restored.data_dir, "SELECT memory_id, reason FROM rejections WHERE review_status='pending'")
    assert not filed, f"the restore filed rejections its owner never had: {[r['reason'] for r in filed]}"
    assert_same_state(owner.data_dir, restored.data_dir, "after a restore from the proposals log")
