"""A standby copy (and a read replica) built from proposals written before shard schema 23 holds atoms without the
turn id its owner's migrated shard gives them: it differs from its owner, and once its worker takes the partition
over, a correction said after the upgrade loses to what it corrects.

Finding: since schema 23 an atom carries its message's turn id (``attributes.turn_id``, copied into the proposal
by extract, altm/pipeline/processors/extract.py:138-139), and of two statements made at one time the later turn is
the later version (``order``, altm/pipeline/processors/facets.py:41-43, falling back to the host's ``source_id``
for an atom without one). Atoms stored before the upgrade get theirs from migration 23
(altm/store/sql/0023_atom_turn_ids.sql), which rewrites the shards a worker already has, but not the log: the
upgrade proposals written by 6802e9a still carry atoms without a turn id. A standby copy applies those proposals as
they are (``WriterDriver.follow`` -> ``_fill`` -> ``_copy``, altm/pipeline/_drivers.py:500-590) and publishes
nothing, so no stage derives the atoms again (``StandbyCopies._embed_copy``,
altm/pipeline/runtime/kafka/_standby.py:127-131: its changes go to the vector index only). A worker that joins an
upgraded deployment with ``ALTM_WORKER_STANDBY`` therefore keeps copies whose atoms have no turn id, and when it
takes the partition over (``KafkaRuntime._restored``, altm/pipeline/runtime/kafka/_runtime.py:466-495) it restores
only what came after its copy. Its govern then orders the old atom by its host message id ("m-1") against the
correction's turn id ("2"): the correction counts as the earlier statement and, with no model, the supersede is
held for review with both facets current (the failure ``tests/negative/test_upgrade_atom_turn_order.py`` fixed
for a data dir that is upgraded in place; here the owner, upgraded in place, supersedes). A read replica
(``ALTM_READ_REPLICA``, the retrieval service) applies the same proposals the same way. A plain restore happens to
heal: it republishes the changes and extract proposes each atom again, with its turn id.

Reproduction: 6802e9a's ``altm worker`` (tests/support/old_release.py) derives "I prefer dark mode in the editor."
(turn "1", host id "m-1") and stops; today's worker A opens that data dir (migrating it: its atom gets turn "1");
a read replica starts, and worker B (``worker_standby``, a data dir of its own, joining last so A keeps the user's
partition) joins; both catch up with A. A stops, B owns the partition; the user then says "I prefer light mode in
the editor now, actually." (turn "2", host id "m-2", the same session time).

Expected: the copy and the replica equal A's shard (every state table, the state hash); after the takeover the
light-mode facet supersedes the dark-mode one and nothing is held for review, as on A. A fix: the writer gives an
atom without a turn id the one of its evidence message when it applies it (as migration 23 does), or the copy and
the replica run migration 23's backfill on what they applied.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from altm.bus.kafka._group import GroupMember
from altm.core import Role, Topic, TurnEvent, partition_for
from altm.wiring import open_deployment, state_hash
from altm.wiring._adapters import resolve
from altm.wiring._worker import prepare_kafka
from tests.integration.test_kafka_restore import _publish, _until_l0
from tests.support.facets import dark_and_light_facets
from tests.support.kafka_history import applied, sealed_settings, until, worker
from tests.support.old_release import old_release
from tests.support.rows import rows
from tests.support.turns import SCOPE
from tests.support.workers import Process, stop, wait_until_idle

pytestmark = pytest.mark.kafka

SESSION_DATE = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
SAID = TurnEvent(scope=SCOPE, session_id="s1", turn_id="1", source_id="m-1", role=Role.USER,
                 content="I prefer dark mode in the editor.", timestamp=SESSION_DATE)
CORRECTED = TurnEvent(scope=SCOPE, session_id="s1", turn_id="2", source_id="m-2", role=Role.USER,
                      content="I prefer light mode in the editor now, actually.", timestamp=SESSION_DATE)


def _old_worker(bootstrap: str, data_dir: Path, env: dict[str, str]) -> Process:
    """6802e9a's ``altm worker`` (shard schema 20) on ``data_dir``."""
    release = old_release()
    child = {k: v for k, v in env.items() if not k.startswith("PYTHON")}
    child["PYTHONPATH"] = str(release)
    data_dir.mkdir(parents=True)
    return subprocess.Popen([sys.executable, "-m", "altm", "worker", "--broker", f"kafka://{bootstrap}",
                             "--data-dir", str(data_dir), "--partitions", "4"], env=child, cwd=release,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _joining_last(*args: Any, **kwargs: Any) -> GroupMember:
    """B's group member: its member id sorts after A's, so the range assignor gives A the first partitions."""
    return GroupMember(*args, **{**kwargs, "client_id": "zz-standby"})


def _atoms(data_dir: Path) -> list[tuple[str, object]]:
    """Each L2 atom's id and the turn id it carries."""
    return [(str(r["memory_id"]), r["turn"]) for r in rows(
        data_dir, "SELECT memory_id, json_extract(attributes, '$.turn_id') AS turn FROM memories WHERE layer = 'L2' "
                  "ORDER BY memory_id")]


async def test_a_standby_copy_of_a_log_written_before_the_upgrade_equals_its_migrated_owner(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"u{uuid.uuid4().hex[:10]}."
    keys = tmp_path / "keys.db"
    user = partition_for(SCOPE.home, 4)
    assert user < 2  # A's range with two members
    a = sealed_settings(tmp_path / "a", 600.0, keystore=keys).model_copy(
        update={"broker": f"kafka://{kafka_bootstrap}", "topic_prefix": prefix, "worker_session_timeout_s": 6})
    b = a.model_copy(update={"data_dir": tmp_path / "b", "worker_standby": True})
    r = a.model_copy(update={"data_dir": tmp_path / "replica", "read_replica": True})
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           "ALTM_KEYSTORE": f"sqlite:///{keys}", "ALTM_WORKER_METRICS_PORT": "0"}
    await _publish(kafka_bootstrap, prefix, [SAID], create=True)
    old = _old_worker(kafka_bootstrap, a.data_dir, env)
    try:
        await _until_l0(a.data_dir, 1)
        await wait_until_idle(kafka_bootstrap, prefix, old, data_dir=a.data_dir)
    finally:
        stop(old)
    assert [turn for _, turn in _atoms(a.data_dir)] == [None]  # 6802e9a's atom: no turn id

    await prepare_kafka(resolve(a))
    async with worker(a) as owner:  # today's worker: the data dir migrates, its atom gets turn "1"
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=a.data_dir)
        owners = _atoms(a.data_dir)
        assert [turn for _, turn in owners] == ["1"]
        replica = await open_deployment(r)
        await replica.start()
        try:
            monkeypatch.setattr("altm.pipeline.runtime.kafka._runtime.GroupMember", _joining_last)
            async with worker(b) as standby:
                await until(lambda: user in owner._owned(Topic.PROPOSALS) and bool(standby._owned(Topic.PROPOSALS))
                            and user not in standby._owned(Topic.PROPOSALS), "B joined, A kept the user's partition")
                await until(lambda: applied(b.data_dir, user) == applied(a.data_dir, user) > 0,
                            "B's copy caught up with A")
                await until(lambda: applied(r.data_dir, user) == applied(a.data_dir, user), "the replica caught up")
                copy, replicated = _atoms(b.data_dir), _atoms(r.data_dir)
                copy_hash, replica_hash, owner_hash = (state_hash(b.data_dir), state_hash(r.data_dir),
                                                       state_hash(a.data_dir))
        finally:
            await replica.close()
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=a.data_dir)

    async with worker(b):  # A is gone: B owns every partition, its copy of the user's is warm
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=b.data_dir)
        await _publish(kafka_bootstrap, prefix, [CORRECTED])
        await _until_l0(b.data_dir, 2)
        await wait_until_idle(kafka_bootstrap, prefix, data_dir=b.data_dir)
    facets = dark_and_light_facets(b.data_dir)
    held = [(h["action"], h["reason"]) for h in rows(b.data_dir, "SELECT action, reason FROM held_actions")]

    # actual: the copy's and the replica's atom have no turn id (None where A's has "1"), so their state hashes
    # differ from A's; after the takeover the supersede is held for review and both facets stay current
    assert (copy, replicated) == (owners, owners)
    assert (copy_hash, replica_hash) == (owner_hash, owner_hash)
    assert set(facets) == {"dark", "light"}
    assert held == []
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"]
    assert facets["light"]["superseded_by"] is None
