"""Deferred work a worker hands over after ``ALTM_TOPIC_PREFIX`` changed goes to the old prefix's topic, which no
worker reads any more: the new owner never gets it, and this worker has deleted its copy.

Finding: a stage's or the writer's deferred work keeps the record's full topic name (``_defer`` ->
``DeferredWork.add``, altm/pipeline/_drivers.py:321-327, altm/store/_work.py:52-66). When its partition is now
another worker's, the hand-over publishes it "again to its input topic" for the new owner, by that stored name
(``KafkaRuntime._hand_over``, altm/pipeline/runtime/kafka/_runtime.py:538-555: ``OutgoingRecord(i.topic, ...)``),
and then removes it (``self.work.done(item)``). A data dir whose prefix changed (README: "a changed
ALTM_TOPIC_PREFIX keeps the data dir's partition count"; its outbox rows are published under the new prefix for
the same reason, ``WriterDriver.outbox_topic``, altm/pipeline/_drivers.py:689-697) still holds items named
``<old prefix>changes`` / ``<old prefix>proposals``: they are sent to topics of the old prefix, which nobody
consumes (the group ``<new prefix>workers`` reads the new topics), and deleted here. The record a model could not
answer (an extraction, a capsule) or a proposal the guard could not decide is lost for good: nothing derives or
applies it, and nothing says so.

Reproduction (stand-ins, no broker): a worker with standby copies (a data dir of its own) whose previous run, under
the default prefix ``altm.``, deferred an extraction of partition 2 and a writer proposal of partition 2; it starts
again under ``ALTM_TOPIC_PREFIX=team-a.`` and is assigned partition 1 only, so the first assignment hands
partition 2's deferred work over.

Expected: both items are published to the topics the new owner reads (``team-a.changes``, ``team-a.proposals``),
as the outbox rows are. A fix: hand an item over to ``topic_name(kind, settings.topic_prefix)`` of its stored
topic's kind (``outbox_topic``'s rule), or store the kind in ``deferred_work.topic``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from altm.bus import TopicPartition
from altm.core import Settings, Topic, topic_name
from altm.pipeline import ProcessorContext
from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.store import ShardSet
from tests.support.lanes import Member, until
from tests.unit.pipeline.test_kafka_worker_edges import _Capture


async def test_deferred_work_handed_over_after_a_prefix_change_goes_to_the_topics_the_new_owner_reads(
        tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                        worker_standby=True, topic_prefix="team-a.")
    shards = ShardSet(settings.data_dir, settings.partitions)
    rt: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    try:
        # left by the last run, under the default prefix
        rt.work.add("extract", topic_name(Topic.CHANGES, "altm."), 2, 7, "t/w/u", b"a change", "model unavailable")
        rt.work.add("writer", topic_name(Topic.PROPOSALS, "altm."), 2, 9, "t/w/u", b"a proposal",
                    "the guard could not decide")
        owned = {TopicPartition(topic_name(t, "team-a."), 1) for t in (Topic.CHANGES, Topic.PROPOSALS)}
        rt._member, rt.bus = Member(owned, committed=None), _Capture()
        await rt.assigned(frozenset(owned))
        await until(lambda: not rt._handovers)
        assert rt.work.pending({2}) == []  # handed over: removed here
        # actual: ['altm.changes', 'altm.proposals'], topics no worker of prefix team-a. reads
        assert sorted(r.topic for r in rt.bus.sent) == ["team-a.changes", "team-a.proposals"]
    finally:
        shards.close()
