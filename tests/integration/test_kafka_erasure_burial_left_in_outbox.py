"""An erasure's tombstones live only in the outbox of the worker that applied it until its next flush: a worker that
stops (or dies) before that flush leaves the next owner of the partition without them, and the erased text sent
again is stored there.

Finding: the writer that applies an erasure makes its tombstones (hashes of the erased content) and puts them on
the log as a ``bury`` proposal only through its shard's outbox, in the erasure's own transaction
(altm/pipeline/writer/_apply.py:234-235), published by the next flush (``WriterDriver.flush``,
altm/pipeline/_drivers.py:674-687). The erasure's offset is stored in the same transaction, so once it committed
nothing will apply it again on that worker; if the flush does not happen (the worker SIGKILLed between the commit
and the flush, or its broker connection lost and the worker stopped: the stop's own flush fails and is only logged,
altm/pipeline/runtime/kafka/_runtime.py:232-237), the ``bury`` stays in a data dir no other worker reads. The
worker that takes the partition over restores it from the log (``KafkaRuntime._restored`` -> ``WriterDriver._fill``,
altm/pipeline/_drivers.py:527-563), which opens records with ``retired=False`` (_runtime.py:461-464): the erased
session's proposals, sealed with the keys the erasure retired, are skipped as shredded, so the restored shard never
has the content to hash, and no ``bury`` follows the erasure on the log (``_read_past`` finds none). The new owner
holds no tombstone of the erasure, and its write guard lets the erased text back in. The old owner never heals it:
while it does not own the partition nothing flushes that outbox; with ``ALTM_WORKER_STANDBY`` its copy deletes the
unpublished rows once the new owner committed past them (``drop_unpublished``, _drivers.py:518-524), and with
``ALTM_WORKER_DROP_UNOWNED_AFTER_S`` the shard is deleted (``KafkaRuntime._drop``).

Reproduction: worker A (a data dir of its own, the log sealed with a shared key store) derives a secret message in
session s-secret and an unrelated one; A's writer then loses the broker (its publishes fail) just as the erasure of
s-secret arrives: A applies the erasure (its shard holds three tombstones; the ``bury`` waits in its outbox) and
stops. Worker B (a data dir of its own) takes every partition, restores from the log, and the user sends the secret
message again in another session.

Expected: B holds the erasure's tombstones, as A does, and refuses the re-sent secret (a rejection, nothing stored),
as it does when A's flush went through (the same test with A's publishes intact passes). A fix: the ``bury`` on
the log before the erasure's offset is stored (published and acknowledged inside the erasure's apply, or written
by the erasure stage with its proposal), or a restore that meets an erasure without its ``bury`` makes the
tombstones from the records the erasure retired, which it may still open within ``ALTM_RETIRED_KEY_GRACE_S``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from altm.bus import BusError, OutgoingRecord, host_record
from altm.bus.kafka import KafkaBus
from altm.core import Settings
from altm.pipeline._drivers import WriterDriver
from altm.pipeline.writer import Writer
from altm.store import DeferredWork, ShardSet, shard_files
from altm.wiring._adapters import resolve
from altm.wiring._worker import prepare_kafka
from tests.support.kafka_history import host_records, sealed_settings, send, until, worker
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn
from tests.support.workers import _outbox_rows, wait_until_idle

pytestmark = pytest.mark.kafka

SECRET = "ZEBRA-4471-SECRET"
TURNS = [make_turn(1, f"My vault code is {SECRET}, keep it.", session="s-secret"),
         make_turn(2, "Unrelated: the billing deadline is March 3.", session="s1")]
AGAIN = make_turn(7, f"My vault code is {SECRET}, keep it.", session="s2")
TOMBSTONES = "SELECT tombstone_id, value_hash, shingle_hashes, term_hashes FROM tombstones ORDER BY tombstone_id"


def _holding_secret(data_dir: Path) -> int:
    return len(rows(data_dir, f"SELECT memory_id FROM memories WHERE content LIKE '%{SECRET}%'"))


async def _erased_on_a_worker_that_could_not_flush(kafka_bootstrap: str, tmp_path: Path
                                                   ) -> tuple[Settings, Settings, list[dict[str, Any]]]:
    """A applied the erasure of s-secret with its publishes failing and stopped: its tombstones (returned) wait
    in its outbox. Returns A's and B's settings."""
    source = sealed_settings(tmp_path / "source", 600.0)  # the host events: two turns, then the erasure
    async with store_with(source, TURNS) as (runtime, app):
        await app.erase(SCOPE, "session", session_id="s-secret")
        await runtime.run_until_idle()
    records = await host_records(source)
    turns, erasure = records[:-1], records[-1:]

    prefix = f"b{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    a = sealed_settings(tmp_path / "a", 600.0, keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6,
                "worker_revoke_wait_s": 1.0})
    b = a.model_copy(update={"data_dir": tmp_path / "b"})
    await prepare_kafka(resolve(a))
    async with worker(a) as owner:
        await send(kafka_bootstrap, prefix, turns, source.topic_prefix)
        await until(lambda: _holding_secret(a.data_dir) > 0, "A stored the secret")
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=a.data_dir)

        async def unreachable(_: Sequence[OutgoingRecord]) -> None:  # A's writer loses the broker from here on
            raise BusError("the broker is unreachable")

        owner.writer.publish = unreachable
        await send(kafka_bootstrap, prefix, erasure, source.topic_prefix)
        await until(lambda: _holding_secret(a.data_dir) == 0 and _outbox_rows(a.data_dir) > 0,
                    "A applied the erasure; its changes and bury wait in its outbox")
    made = rows(a.data_dir, TOMBSTONES)
    assert made  # A buried the secret
    return a, b, made


async def _send_again(kafka_bootstrap: str, b: Settings) -> list[str]:
    """The secret sent again, in another session; the reasons B refused anything for."""
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.publish_many([host_record(Settings(topic_prefix=b.topic_prefix), AGAIN)])
    finally:
        await bus.stop()
    await wait_until_idle(kafka_bootstrap, b.topic_prefix, data_dir=b.data_dir)
    return [str(r["reason"]) for r in rows(b.data_dir, "SELECT reason FROM rejections")]


@pytest.mark.xfail(strict=True, reason=(
    "known gap (README, Known gaps): the tombstones exist only in the outbox of the worker that applied the "
    "erasure (its session's keys were destroyed then, so no other worker can make them); they reach the log when "
    "that worker's data dir comes back (the next test), not when it is lost for good"))
async def test_the_next_owner_holds_the_tombstones_of_an_erasure_its_owner_could_not_flush(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    _, b, made = await _erased_on_a_worker_that_could_not_flush(kafka_bootstrap, tmp_path)
    async with worker(b):  # A is gone: B takes every partition and restores them from the log
        await wait_until_idle(kafka_bootstrap, b.topic_prefix, data_dir=b.data_dir)
        restored = rows(b.data_dir, TOMBSTONES)
        refused = await _send_again(kafka_bootstrap, b)

    # actual: B holds no tombstone, stores the secret sent again (its message and an atom) and refuses nothing
    assert restored == made
    assert _holding_secret(b.data_dir) == 0
    assert any("matches erased content" in reason for reason in refused), refused


async def test_the_tombstones_reach_the_next_owner_when_the_worker_that_made_them_comes_back(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """A's data dir comes back while B owns the partition: what A's outbox kept of the erasure (its ``bury``)
    goes to the log (``WriterDriver.publish_burials``, what A's first assignment does for every partition it
    does not own), and B applies it: B holds A's tombstones and refuses the secret sent again."""
    a, b, made = await _erased_on_a_worker_that_could_not_flush(kafka_bootstrap, tmp_path)
    async with worker(b):  # B takes every partition and restores them from the log: no tombstone yet
        await wait_until_idle(kafka_bootstrap, b.topic_prefix, data_dir=b.data_dir)
        assert rows(b.data_dir, TOMBSTONES) == []
        shards = ShardSet(a.data_dir, a.partitions)  # A's data dir back; its worker would not own the partition
        bus = KafkaBus(kafka_bootstrap)
        await bus.start()
        async def publish(records: Sequence[OutgoingRecord]) -> None:
            await bus.publish_many(records)

        try:
            settings = resolve(a)
            driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), publish, "a")
            published = sum([await driver.publish_burials(p) for p, _ in shard_files(a.data_dir)])
        finally:
            await bus.stop()
            shards.close()
        assert published > 0
        await wait_until_idle(kafka_bootstrap, b.topic_prefix, data_dir=b.data_dir)
        assert rows(b.data_dir, TOMBSTONES) == made
        refused = await _send_again(kafka_bootstrap, b)
    assert _holding_secret(b.data_dir) == 0
    assert any("matches erased content" in reason for reason in refused), refused
