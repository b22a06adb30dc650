"""An older statement that arrives after the correction that replaced it comes back as a current facet: the
persona's current version depends on arrival order, and the user's correction loses.

Finding: ``GovernProcessor._facet`` (altm/pipeline/processors/govern.py:192-216) only ever looks backwards from
the atom being governed: ``earlier`` is the atoms ordered before it (``order``: valid time, natural turn id,
correction, id; altm/pipeline/processors/facets.py:35-43), and the facet of the greatest of them is superseded by
this atom's facet. Nothing looks forwards. When the later statement (a correction, "I prefer light mode in the
editor now, actually.", day 2) is governed before the earlier one is stored, it has no predecessor; when the
earlier statement ("I prefer dark mode in the editor.", day 1) arrives afterwards, it is governed with
``first`` = itself and ``earlier`` = nothing (the correction orders after it), so its facet is proposed as a
current version and nothing supersedes it. A host that backfills a user's past conversations after the user
has already talked to the agent (an import of an older chat export, an offline client syncing late, a retried
batch of an earlier session) does exactly that. The persona then shows both the stale preference and its
correction as current, and recall's facets answer with the stale one beside the new one. The README says
"Derived state is recomputed from what is stored, so the final state does not depend on arrival order"; the
same two messages sent in time order give one current facet (dark superseded by light).

Reproduction: embedded runtime, no embedder; send the day-2 correction (session s2) and derive it until idle,
then send the day-1 statement (session s1) and derive it until idle; read the L4 facets. A second data dir
receives the same two turns in time order.

Expected: the same state as in time order: the dark-mode facet is superseded by the light-mode facet, the
light-mode facet is the only current version, and no supersede is held for review, whichever message arrived
first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import running
from tests.support.rows import rows
from tests.support.turns import SCOPE

DAY_ONE = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
SAID = TurnEvent(scope=SCOPE, session_id="s1", turn_id="s1-1", role=Role.USER,
                 content="I prefer dark mode in the editor.", timestamp=DAY_ONE)
CORRECTED = TurnEvent(scope=SCOPE, session_id="s2", turn_id="s2-1", role=Role.USER,
                      content="I prefer light mode in the editor now, actually.", timestamp=DAY_ONE + timedelta(days=1))


async def _facets(settings: Settings, data_dir: Path, arrival: list[TurnEvent]) -> dict[str, dict[str, Any]]:
    s = settings.model_copy(update={"data_dir": data_dir, "embedder": "none"})
    async with running(s) as rt:
        for turn in arrival:  # one at a time: the later one really comes later
            await rt.publish([turn])
            await rt.run_until_idle()
    return {("light" if "light" in str(r["content"]) else "dark"): r for r in rows(
        data_dir, "SELECT memory_id, content, superseded_by FROM memories WHERE layer = 'L4'")}


async def test_an_older_statement_arriving_late_does_not_outlive_its_correction(settings: Settings,
                                                                                tmp_path: Path) -> None:
    in_order = await _facets(settings, tmp_path / "in-order", [SAID, CORRECTED])
    assert set(in_order) == {"dark", "light"}
    assert in_order["dark"]["superseded_by"] == in_order["light"]["memory_id"]  # the user's last word is current
    assert in_order["light"]["superseded_by"] is None

    late = await _facets(settings, tmp_path / "late", [CORRECTED, SAID])
    assert set(late) == {"dark", "light"}
    assert rows(tmp_path / "late", "SELECT action, reason FROM held_actions") == []
    assert late["light"]["superseded_by"] is None
    # actual: None — the stale dark-mode preference is a current facet beside its correction
    assert late["dark"]["superseded_by"] == late["light"]["memory_id"]
