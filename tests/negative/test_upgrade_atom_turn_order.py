"""Atoms stored before the upgrade never get the turn id today's atoms carry: a correction said after the upgrade
loses to the statement it corrects (same session time, a host that sends its own message ids), and a replay of
the upgraded deployment's own log no longer gives its state hash.

Finding: today's code orders atoms by their message's turn id, which extraction now copies into a new atom's
attributes (``attributes["turn_id"]``, altm/pipeline/processors/extract.py:138-139), and falls back to the
atom's ``source_id`` for an atom that has none (``order``, altm/pipeline/processors/facets.py:41-43). Every atom
a data dir of 6802e9a (shard schema 20) holds has none, and nothing gives it one on upgrade (no migration
backfills ``attributes.turn_id`` from the atom's L0 evidence row, whose attributes have always held the turn id,
altm/pipeline/processors/capture.py:41). So, at one ``valid_from``, an old atom is placed by the host's message
id (``source_id``, "m-1") and a new one by the turn id ("2"): two different id spaces compared by
``natural_key``, where a digit run sorts before any letter ("00012" < "m-00011"). The correction said after the
upgrade counts as the *earlier* statement: govern (altm/pipeline/processors/govern.py:197-218) finds no earlier
version for it, takes the old dark-mode facet for the *later* version that replaces it, and, with no model and no
correction cue on that stale atom, holds that supersede for review. 6802e9a alone (both statements ordered by
source id) and today's code alone (both by turn id) both supersede dark mode by light mode; only the upgrade
reverses them. The same mixed order decides which of two contradicting atoms NLI marks contradicted
(altm/pipeline/processors/verify.py:229) and the memory listing's order (``TURN_SQL``,
altm/store/_conversation.py:26).
The same missing backfill splits an upgraded data dir from its own log: a replay (``altm replay --into``, then
``altm state-hash`` "compares the result", README, Re-derivation; "replaying the same log yields the same state
hash") re-extracts every atom with ``turn_id`` in its attributes, the source's atoms have none, so every data dir
with atoms hashes differently from its replay after the upgrade (only the atoms' attributes differ) and a
restore check fails for every user.

Reproduction (1): 6802e9a ingests turn "1" (source id "m-1", 2023-05-08T13:56Z) "I prefer dark mode in the editor."
into a data dir; today's code opens that data dir and ingests turn "2" of the same session (source id "m-2", the
same time) "I prefer light mode in the editor now, actually."; read the L4 facets and the held actions.
(2): 6802e9a ingests the sample conversation; today's code opens the data dir (migrating it), replays its log into
a fresh dir, and hashes both.

Expected: (1) as with either release alone, the dark-mode facet is superseded by the light-mode facet, the light-mode
facet is current, and no supersede is held for review (e.g. a migration that copies each atom's evidence
message's ``turn_id`` into the atom's attributes, or ``order`` reading an atom's turn id from its evidence).
(2) the replay's state hash equals the upgraded source's (which the migration's backfill gives, written with
the attributes' keys sorted as the writer writes them; ``order`` alone reading the evidence would not).
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
from datetime import UTC, datetime
from pathlib import Path
from altm.core import Role, Scope, Settings, TurnEvent
from altm.wiring import open_embedded

async def main() -> None:
    s = Settings(data_dir=Path(sys.argv[1]), partitions=4, embedder="none")
    scope = Scope(tenant_id="acme", workspace_id="platform", user_id="dana", agent_id="coder")
    async with open_embedded(s) as d:
        await d.runtime.publish([TurnEvent(scope=scope, session_id="s1", turn_id="1", source_id="m-1",
                                           role=Role.USER, content=sys.argv[2],
                                           timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))])
        await d.runtime.run_until_idle()

asyncio.run(main())
"""


async def test_a_correction_after_the_upgrade_supersedes_what_it_corrects(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run_old(_OLD, str(data), SAID)
    s = Settings(data_dir=data, partitions=4, embedder="none")
    later = TurnEvent(scope=SCOPE, session_id="s1", turn_id="2", source_id="m-2", role=Role.USER, content=CORRECTED,
                      timestamp=SESSION_DATE)
    async with store_with(s, [later]):
        pass
    facets = dark_and_light_facets(data)
    assert set(facets) == {"dark", "light"}
    held = [(r["action"], r["reason"]) for r in rows(data, "SELECT action, reason FROM held_actions")]
    # actual: a supersede of the light-mode facet by the dark-mode one is held for review, both current
    assert held == []
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"]
    assert facets["light"]["superseded_by"] is None


_OLD_SAMPLE = """
import sys
from typer.testing import CliRunner
from altm.interfaces.cli import app, sample_path

done = CliRunner().invoke(app, ["ingest", "--data-dir", sys.argv[1], str(sample_path())],
                          env={"ALTM_EMBEDDER": "none"})
assert done.exit_code == 0, done.output
"""


async def test_a_replay_of_an_upgraded_data_dirs_log_gives_its_state_hash(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "replayed"
    run_old(_OLD_SAMPLE, str(source))
    s = Settings(data_dir=source, embedder="none")
    async with open_embedded(s) as deployment:  # today's code opens it for writing: migrated to schema 22
        assert deployment.runtime is not None
        await deployment.runtime.run_until_idle()
    await replay_into(source, target, settings=s)
    untagged = sum(int(r["n"]) for r in rows(source, "SELECT COUNT(*) AS n FROM memories WHERE layer = 'L2' "
                                                 "AND json_extract(attributes, '$.turn_id') IS NULL"))
    # actual: differ; every atom of the source lacks the turn id its replayed self carries
    assert state_hash(source, s) == state_hash(target, s), f"{untagged} atoms of the source have no turn_id"
