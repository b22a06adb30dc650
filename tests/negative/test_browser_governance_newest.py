"""The memory browser's governance page lists a user's oldest 500 decision steps only: the newest decisions, the
ones a person comes to roll back, never appear once a user has that many.

Finding: ``/ui/governance`` (``altm/interfaces/browser/_pages.py``, ``governance``) reads
``governance_events(parsed, limit=500)``, and ``GovernanceQueries.events`` (``altm/store/_queries.py``) orders the
steps ``ORDER BY at, decision_id, event_id LIMIT ?``: oldest first, cut at 500, with no paging and no note that
anything was left out. Every merge, supersession, promotion, demotion, forget and held action is a step, and
promotions and demotions follow use signals, so a busy user passes 500 steps quickly; from then on the page
shows the same old decisions for ever and a new wrong decision (a forget, a merge) cannot be found in the browser
to preview and roll back. The memory page had the same defect for its audit history (the oldest 200 rows, fixed
by showing the newest: ``test_browser_redteam.py::test_the_audit_history_shows_the_latest_change_of_a_busy_memory``).

Expected: the page shows the newest decisions (newest first, or the newest page of them) and says how many older
ones are not shown; a decision made after 500 others is listed with its preview link.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import partition_for
from altm.core.settings import Settings
from tests.support.browser import browser_world, login
from tests.support.turns import SCOPE, make_turn

OLD_STEPS = 510


async def test_the_governance_page_lists_the_newest_decision_of_a_busy_user(settings: Settings,
                                                                              tmp_path: Path) -> None:
    turns = [make_turn(1, "We're migrating the billing service from Flask to FastAPI.", session="s1")]
    async with browser_world(settings, tmp_path, turns) as w:
        rt = w.runtime
        db = rt.shards.get(partition_for(SCOPE.home, rt.shards.partitions))._db
        # what many use signals leave: one promotion step each, all before the decision the person looks for
        for i in range(OLD_STEPS):
            db.execute(
                "INSERT INTO governance_events (event_id, decision_id, tenant_id, workspace_id, user_id, agent_id, "
                "decision, step, inputs, reason, at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (f"gev_old{i}", f"prop_old{i:04d}", SCOPE.tenant_id, SCOPE.workspace_id, SCOPE.user_id,
                 SCOPE.agent_id, "promote", "applied", "{}", "cited often",
                 f"2026-11-{1 + i // 60:02d}T00:{i % 60:02d}:00+00:00"))
        db.execute(
            "INSERT INTO governance_events (event_id, decision_id, tenant_id, workspace_id, user_id, agent_id, "
            "decision, step, inputs, reason, at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            ("gev_newest", "prop_newest", SCOPE.tenant_id, SCOPE.workspace_id, SCOPE.user_id, SCOPE.agent_id,
             "forget", "applied", "{}", "the newest decision: forgot the billing deadline",
             "2026-12-01T09:00:00+00:00"))
        db.commit()
        await login(w.client, w.keys["user"])
        page = await w.client.get("/ui/governance", params={"scope": SCOPE.path})
        assert page.status_code == 200
        # the decision itself opens (its own page reads every step) ...
        opened = await w.client.get("/ui/governance/prop_newest", params={"scope": SCOPE.path})
        assert opened.status_code == 200 and "forgot the billing deadline" in opened.text
        # ... but the list a person starts from never shows it: today only the oldest 500 steps are read
        assert "prop_newest" in page.text, "the governance page does not list the newest decision"
