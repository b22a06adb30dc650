"""A standby copy (``ALTM_WORKER_STANDBY``) must equal its owner's shard, also after an erasure of another session,
and so must the worker that takes the partition over from it.

Finding: a standby copy applies the proposals its owner committed, read from the log with ``retired=False``
(``WriterDriver.follow`` reads through ``KafkaRuntime._fetch_proposals``,
``altm/pipeline/runtime/kafka/_runtime.py:466``). Proposals that carry no session of their own are sealed with the
user's per-agent "derived" key (``altm/bus/sealing/_sealer.py:144-146``: signals such as ``compress`` and
``helpful``, recorded cycles, forgets, trust verdicts, links, merges, L3/L4 memories), which every erasure of a
session, an agent or the user retires (``altm/pipeline/writer/_apply.py:298``). A copy that reads them after
the owner applied such an erasure (a worker that joins later; a copy more than its 2 s tick behind the owner)
skips every one of them as shredded, although they carry no erased content and the owner keeps them. Unlike a
restore, a copy publishes nothing, so not even links, verdicts and facets are derived again
(``altm/pipeline/runtime/kafka/_standby.py:127-131``, ``_embed_copy``: the changes go to the index only); and
when the copy's worker takes the partition over, it restores only what came after the copy
(``KafkaRuntime._restored``), so the worker that now owns the partition stays without them for good: its
shard's ``altm.wiring.state_hash`` differs from its former owner's and from the embedded runtime's on the same
input (the memories lose their compression levels and feedback, the L4 facet, trust verdicts and the graph).

Reproduction: coder says one thing in session s1 and one in s2 (dated in the past); feedback ``helpful`` on the
s1 message; a compaction pass; an erasure of session s2; one worker (A) applies it all, equal to the embedded
run. A second worker (B, ``worker_standby``, a data dir of its own) joins and does not get the user's partition:
its copy, caught up with A's committed offsets, lacks the s1 memories' signals; A stops, B owns the partition,
and its shard still differs from A's.

Expected: the copy (and B after the takeover) equals A's shard (every state table, the state hash). A record
that carries no content of the erased scope is not sealed with a key the erasure retires, or a copy applies what
its owner applied with the keys that were current then.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from altm.bus.kafka._group import GroupMember
from altm.core import Role, Topic, TurnEvent, partition_for
from altm.wiring._adapters import resolve
from altm.wiring._worker import prepare_kafka
from tests.support.kafka_history import applied, host_records, sealed_settings, send, until, worker
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




def _joining_last(*args: Any, **kwargs: Any) -> GroupMember:
    """B's group member: its member id sorts after A's, so the range assignor gives A the first partitions."""
    return GroupMember(*args, **{**kwargs, "client_id": "zz-standby"})


async def test_a_standby_copy_after_an_erasure_keeps_the_signals_of_another_sessions_memories(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 60.0)  # the order, not its bound
    source = sealed_settings(tmp_path / "source", 600.0)
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
    user = partition_for(SCOPE.home, 4)
    assert user < 2  # A's range with two members

    prefix = f"s{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    a = sealed_settings(tmp_path / "a", 600.0, keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6})
    b = a.model_copy(update={"data_dir": tmp_path / "b", "worker_standby": True})
    await prepare_kafka(resolve(a))
    async with worker(a) as owner:
        await send(kafka_bootstrap, prefix, records, source.topic_prefix, a.data_dir)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=a.data_dir)
        assert_same_state(source.data_dir, a.data_dir, "on Kafka")  # holds: A equals the embedded run
        monkeypatch.setattr("altm.pipeline.runtime.kafka._runtime.GroupMember", _joining_last)
        async with worker(b) as standby:
            await until(lambda: user in owner._owned(Topic.PROPOSALS) and bool(standby._owned(Topic.PROPOSALS))
                         and user not in standby._owned(Topic.PROPOSALS), "B joined, A kept the user's partition")
            await until(lambda: applied(b.data_dir, user) == applied(a.data_dir, user) > 0,
                         "B's copy caught up with A")
            copy = _signals(b.data_dir)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=a.data_dir)
    assert copy == signals, (
        "the standby copy skipped the signals of s1's memories: sealed with the derived key the erasure of s2 "
        "retired")

    async with worker(b):  # A is gone: B owns every partition, its copy of the user's is warm
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=b.data_dir)
    assert_same_state(a.data_dir, b.data_dir, "after B took over from its standby copy")
