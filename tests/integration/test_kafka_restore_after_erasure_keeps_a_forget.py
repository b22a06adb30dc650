"""A shard restored from the proposals log must not bring back what a retention pass forgot.

Finding: a ``forget`` proposal (a retention pass) names memory ids and carries no session of its own, so it is
sealed with the user's per-agent "derived" key (``altm/bus/sealing/_sealer.py:144-146``, ``owner_of``:
``Owner(home, agent, DERIVED)``). Any later erasure of a session, an agent or the user retires that key
(``altm/pipeline/writer/_apply.py:298``: ``self.keys.retire(scope.home, DERIVED)``) and destroys it after
``ALTM_RETIRED_KEY_GRACE_S``. A restore reads the proposals log with ``retired=False``
(``altm/pipeline/runtime/kafka/_runtime.py:466``, ``_fetch_proposals``), so it skips the forget as shredded
while it still applies the upserts of the forgotten messages (sealed with their session's key, which the erasure
of another session leaves alone): the restored shard holds, and serves to recall, messages that retention had
removed from the owner's shard (content a deployment promised to delete after ``ALTM_RETENTION_DAYS_L0``). The
restore publishes their changes again, so the stages derive from them once more. Nothing on the log says to
forget them again (a retention pass is a control event, run once; without ``ALTM_RETENTION_TOMBSTONES`` there is
no ``bury`` either). The same reading is in a standby copy's catch-up and the read replica
(``altm/pipeline/runtime/replica.py:127``).

Reproduction: coder says one thing in session s1 and one in s2, both dated in the past; a retention pass
forgets both messages (30 days for L0); an erasure of session s2. The owner on Kafka equals the embedded run
and holds no L0 message; a worker with a fresh data dir restoring the partition holds s1's message again.

Expected: the restored shard equals the owner's (``altm.wiring.state_hash``, every state table) and holds no
forgotten message. A forget is not sealed with a key an erasure of something else retires (it carries ids and a
reason, no content: e.g. the user's key, as pins and review decisions are), or a restore applies what its owner
applied with the keys that were current then.
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


GAP = pytest.mark.xfail(strict=True, reason=(
    "known gap (README, Known gaps): after an erasure, records sealed with the derived key it retired are"
    " not read: the forget's record names the erased session's message as gone, where the owner's erasure"
    " dropped it"
))


@pytest.mark.parametrize("whole", [False, pytest.param(True, marks=GAP)], ids=["forgotten", "whole-state"])
async def test_a_restore_after_an_erasure_of_another_session_forgets_what_retention_forgot(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        whole: bool) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 60.0)
    source = sealed_settings(tmp_path / "source", 600.0).model_copy(update={"retention_days_l0": 30.0})
    async with store_with(source, [KEPT, ERASED]) as (runtime, app):
        assert await app.admin.retention(OLD + timedelta(days=45))  # s1's and s2's messages, past retention
        await runtime.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s2")
        await runtime.run_until_idle()
    forgotten = "SELECT memory_id FROM memories WHERE layer='L0'"
    assert not rows(source.data_dir, forgotten)
    records = await host_records(source)

    prefix = f"e{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    owner = sealed_settings(tmp_path / "owner", 600.0, keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6,
                "retention_days_l0": 30.0})
    await prepare_kafka(resolve(owner))
    async with worker(owner):
        await send(kafka_bootstrap, prefix, records, source.topic_prefix, owner.data_dir)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=owner.data_dir)
    assert_same_state(source.data_dir, owner.data_dir, "on Kafka")
    assert not rows(owner.data_dir, forgotten)

    restored = owner.model_copy(update={"data_dir": tmp_path / "restored"})
    async with worker(restored):
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=restored.data_dir)
    back = rows(restored.data_dir, "SELECT session_id, content FROM memories WHERE layer='L0'")
    assert not back, f"the restore holds messages a retention pass forgot: {[dict(r) for r in back]}"
    if whole:
        assert_same_state(owner.data_dir, restored.data_dir, "after a restore from the proposals log")
