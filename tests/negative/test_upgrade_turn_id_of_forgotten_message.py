"""Schema 23 gives no turn id to an atom whose message retention had forgotten before the upgrade: a replay of the
upgraded log hashes differently, and a correction said after the upgrade loses to what it corrects.

Finding: the data migration of schema 23 (altm/store/sql/0023_atom_turn_ids.sql:7-11) takes an atom's turn id from
its evidence message's *row* (``SELECT ... FROM memories l0 WHERE l0.memory_id = evidence[0] AND l0.layer =
'L0'``). An atom outlives its message whenever L0 retention is shorter than L2's (``ALTM_RETENTION_DAYS_L0``:
the message row is deleted, the atom is kept and flagged ``evidence_forgotten``, README "Retention"); for such an
atom the subquery is NULL and ``json_with_key`` (altm/store/_migrations.py:51-60) leaves its attributes as they
were, with no ``turn_id``. The message's turn id is still in the data dir (the forget's audit row keeps the
removed L0 row whole, ``old_value``; the log has the turn), and a replay of the log re-extracts the atom from the
turn with ``attributes.turn_id`` before the replayed retention forgets the message. So (1) every upgraded data
dir that ran L0 retention hashes differently from its own replay (``altm replay --into`` then ``altm
state-hash``: "replaying the same log yields the same state hash"; the restore check fails), the very split
schema 23 was written to close (``test_upgrade_atom_turn_order.py``); and (2) the atom is still ordered by its
host message id (``order``, altm/pipeline/processors/facets.py falls back to ``source_id``) beside new atoms
ordered by turn id, so a correction said after the upgrade in the same exchange time counts as the *earlier*
statement and the old value stays the user's current persona.

Reproduction: 6802e9a (shard schema 20) with ``retention_days_l0=1`` ingests turn "1" (source id "m-1",
2023-05-08T13:56Z) "I prefer dark mode in the editor." and runs ``admin.retention`` 10 days later (the message is
forgotten, the atom and its facet kept). Today's code opens the data dir (migrating it). (1) Replay its log into a
fresh dir and hash both. (2) Ingest turn "2" (source id "m-2", the same time) "I prefer light mode in the editor
now, actually." and read the facets and held actions.

Expected: (1) the atom carries ``turn_id`` "1" after the migration and the replay's state hash equals the
source's; (2) as with either release alone, the dark facet is superseded by the light facet and no supersede is
held for review (e.g. the migration also takes the turn id from the forget's audit image of the message, or from
the ``turn_id`` a forgotten message's tombstone/audit keeps, when its row is gone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from altm.core import Role, Settings, TurnEvent
from altm.wiring import open_embedded, replay_into, state_hash
from tests.support.facets import dark_and_light_facets
from tests.support.memories import store_with
from tests.support.old_release import run_old
from tests.support.rows import rows
from tests.support.turns import SCOPE

SESSION_DATE = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
SAID = "I prefer dark mode in the editor."
CORRECTED = "I prefer light mode in the editor now, actually."

_OLD = """
import asyncio, sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from altm.core import Role, Scope, Settings, TurnEvent
from altm.wiring import open_embedded

async def main() -> None:
    s = Settings(data_dir=Path(sys.argv[1]), partitions=4, embedder="none", retention_days_l0=1.0)
    scope = Scope(tenant_id="acme", workspace_id="platform", user_id="dana", agent_id="coder")
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    async with open_embedded(s) as d:
        await d.runtime.publish([TurnEvent(scope=scope, session_id="s1", turn_id="1", source_id="m-1",
                                           role=Role.USER, content=sys.argv[2], timestamp=said)])
        await d.runtime.run_until_idle()
        assert await d.app.admin.retention(said + timedelta(days=10)) == 1  # the message only
        await d.runtime.run_until_idle()

asyncio.run(main())
"""


def _upgraded(data: Path) -> Settings:
    run_old(_OLD, str(data), SAID)
    return Settings(data_dir=data, partitions=4, embedder="none")


async def test_a_replay_of_an_upgraded_dir_that_forgot_messages_gives_its_state_hash(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "replayed"
    s = _upgraded(source)
    async with open_embedded(s) as deployment:  # today's code opens it for writing: migrated
        assert deployment.runtime is not None
        await deployment.runtime.run_until_idle()
    assert rows(source, "SELECT memory_id FROM memories WHERE layer = 'L0'") == []  # the message forgotten
    (atom,) = rows(source, "SELECT json_extract(attributes, '$.turn_id') AS turn FROM memories WHERE layer = 'L2'")
    await replay_into(source, target, settings=s)
    (replayed,) = rows(target, "SELECT json_extract(attributes, '$.turn_id') AS turn FROM memories "
                               "WHERE layer = 'L2'")
    assert replayed["turn"] == "1"
    # actual: None — the migration found no message row to take it from
    assert atom["turn"] == "1", "the upgraded atom has no turn id (its message was forgotten by retention)"
    assert state_hash(source, s) == state_hash(target, s)


async def test_a_correction_after_the_upgrade_supersedes_an_atom_whose_message_was_forgotten(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = _upgraded(data)
    later = TurnEvent(scope=SCOPE, session_id="s1", turn_id="2", source_id="m-2", role=Role.USER, content=CORRECTED,
                      timestamp=SESSION_DATE)
    async with store_with(s, [later]):
        pass
    facets = dark_and_light_facets(data)
    assert set(facets) == {"dark", "light"}
    held = [(r["action"], r["reason"]) for r in rows(data, "SELECT action, reason FROM held_actions")]
    # actual: the light facet counts as the earlier version: a supersede of it by the dark facet is held
    assert held == [], held
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"], facets
    assert facets["light"]["superseded_by"] is None
