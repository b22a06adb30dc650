"""The memory browser's red-team findings (a review of commit 9a2cbb6), each a test that failed on that commit:
erasures that reach beyond an agent, cross-site form posts (login CSRF), one key evicting other people's logins,
the audit history of a busy memory, another agent's ids in an L4 facet's audit rows, ids with a trailing newline,
and review-queue links to other agents' memories; plus the probes that held, kept as regression tests."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from altm.core import Scope, partition_for
from altm.core.settings import Settings
from altm.interfaces.browser import Logins
from altm.store import MemoryQueries
from tests.support.browser import browser_world, login
from tests.support.turns import SCOPE, make_turn

OTHER = Scope.parse("globex/ops/sam/coder")
REVIEWER = Scope.parse("acme/platform/dana/reviewer")
PREFERS = "I like pytest with fixtures more than unittest classes, please write tests that way."


@pytest.fixture
async def world(settings: Settings, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    turns = [make_turn(1, "We're migrating the billing service from Flask to FastAPI.", session="s1"),
             make_turn(2, "The billing deadline is December 15.", session="s1"),
             make_turn(3, PREFERS, session="s2"),  # becomes an L4 facet of the whole user
             make_turn(4, "Please review PR 1432: it moves the invoice serializers to pydantic models.",
                       scope=REVIEWER, session="r1"),
             make_turn(5, "Globex deploys on Fridays.", scope=OTHER, session="g1")]
    async with browser_world(settings, tmp_path, turns) as w:
        yield {"c": w.client, "keys": w.keys, "rt": w.runtime, "api": w.api, "keystore": w.keystore}


def _rows(rt: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in MemoryQueries(rt.shards).listing(None, limit=1000)]


def _facet(rt: Any) -> dict[str, Any]:
    facets = [r for r in _rows(rt) if r["layer"] == "L4" and "pytest" in r["content"]]
    assert facets, "the pipeline made no L4 facet of the preference"
    return facets[0]


# -- F1: an erasure that reaches beyond the agent (an L4 facet derived from its session) needs a user key ---------
async def test_an_agent_key_cannot_erase_a_user_wide_l4_facet_through_a_session_erasure(world: dict[str, Any]) -> None:
    c, keys, rt = world["c"], world["keys"], world["rt"]
    facet = _facet(rt)
    csrf = await login(c, keys["agent"])
    direct = await c.get("/ui/erase", params={"scope": SCOPE.path, "target": "memory", "memory_id": facet["memory_id"]})
    assert direct.status_code == 403 and "needs a user key" in direct.text
    confirm = await c.get("/ui/erase", params={"scope": SCOPE.path, "target": "session", "session_id": "s2"})
    assert confirm.status_code == 403 and "needs a user key" in confirm.text and "L4" in confirm.text
    done = await c.post("/ui/erase", data={"csrf": csrf, "scope": SCOPE.path, "target": "session",
                                           "session_id": "s2", "confirm": "yes"})
    assert done.status_code == 403
    api = await c.post("/v1/erase", json={"scope": SCOPE.path, "target": "session", "session_id": "s2"},
                       headers={"Authorization": f"Bearer {keys['agent']}"})
    assert api.status_code == 403  # the API's gate is the same
    await rt.run_until_idle()
    assert [r for r in _rows(rt) if r["memory_id"] == facet["memory_id"]]  # the user's facet is still there
    # a user key may, and its confirmation names what goes beyond the agent
    await login(c, keys["user"])
    confirm = await c.get("/ui/erase", params={"scope": SCOPE.path, "target": "session", "session_id": "s2"})
    assert confirm.status_code == 200 and facet["memory_id"] in confirm.text and 'id="erase-shared"' in confirm.text


# -- F2: login CSRF -----------------------------------------------------------------------------------------------
async def test_a_cross_site_login_post_is_refused(world: dict[str, Any]) -> None:
    c, keys = world["c"], world["keys"]
    c.cookies.clear()
    r = await c.post("/ui/login", data={"api_key": keys["globex"]},
                     headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
    # a login form posted from another site is refused (no login cookie is planted) ...
    assert r.status_code in (400, 403) and "set-cookie" not in r.headers
    # ... and from another port of this host (same site for SameSite cookies, another origin)
    r = await c.post("/ui/login", data={"api_key": keys["globex"]}, headers={"Origin": "http://127.0.0.1:9"})
    assert r.status_code == 403 and "set-cookie" not in r.headers
    ok = await c.post("/ui/login", data={"api_key": keys["user"]},
                      headers={"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "same-origin"})
    assert ok.status_code == 303  # this server's own page
    csrf = await login(c, keys["user"])
    forged = await c.post("/ui/logout", data={"csrf": csrf}, headers={"Sec-Fetch-Site": "same-site"})
    assert forged.status_code == 403


# -- F3: one key holder logs every other person out --------------------------------------------------------------
async def test_one_keys_logins_cannot_evict_other_peoples_logins(world: dict[str, Any]) -> None:
    c, keys, api = world["c"], world["keys"], world["api"]
    api.state.logins = Logins(world["keystore"], capacity=5)  # CAPACITY is 10_000; the same LRU, smaller
    await login(c, keys["user"])
    victim = dict(c.cookies)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://127.0.0.1") as attacker:
        for _ in range(6):  # CAPACITY + 1 logins with the attacker's own (globex) key
            assert (await attacker.post("/ui/login", data={"api_key": keys["globex"]})).status_code == 303
    c.cookies.clear()
    c.cookies.update(victim)
    # dana is still logged in (another tenant's key holder cannot end her login)
    assert (await c.get("/ui/scopes")).status_code == 200
    old = c.cookies["altm_login"]
    again = await c.post("/ui/login", data={"api_key": keys["user"]})  # the browser sends the login it holds
    assert again.status_code == 303 and again.cookies["altm_login"] != old
    c.cookies.clear()
    c.cookies.set("altm_login", old)
    assert (await c.get("/ui/scopes")).status_code == 303  # the replaced login is closed


# -- F4: the audit history shows the oldest 200 rows, never the latest change ------------------------------------
async def test_the_audit_history_shows_the_latest_change_of_a_busy_memory(world: dict[str, Any]) -> None:
    c, keys, rt = world["c"], world["keys"], world["rt"]
    target = next(r for r in _rows(rt) if r["layer"] == "L0" and r["agent_id"] == "coder")
    shard = rt.shards.get(partition_for(SCOPE.home, rt.shards.partitions))
    # 210 ordinary update rows (what many lifecycle updates of a cited memory leave), then a marked last one
    db = shard._db
    for i in range(210):
        db.execute("INSERT INTO audit_log (at, proposal_id, actor, action, target_table, target_id, old_value, "
                   "new_value) VALUES (?,?,?,?,?,?,?,?)", (f"2026-12-01T00:{i // 60:02d}:{i % 60:02d}", f"p{i}",
                   "lifecycle", "update", "memories", target["memory_id"], f'{{"lc_injected": {i}}}',
                   f'{{"lc_injected": {i + 1}}}'))
    db.execute("INSERT INTO audit_log (at, proposal_id, actor, action, target_table, target_id, old_value, "
               "new_value) VALUES (?,?,?,?,?,?,?,?)", ("2026-12-01T09:00:00", "p-last", "review", "update",
               "memories", target["memory_id"], '{"trust_status": "unverified"}', '{"trust_status": "contradicted"}'))
    db.commit()
    await login(c, keys["user"])
    page = await c.get(f"/ui/memory/{target['memory_id']}", params={"scope": SCOPE.path})
    assert page.status_code == 200
    # expected: the newest change (who contradicted it) is on the page; today only the oldest 200 rows are shown
    assert "p-last" in page.text


# -- F5: an agent key sees another agent's memory and turn ids in an L4 facet's audit rows ----------------------
async def test_an_l4_facets_audit_rows_do_not_show_another_agents_ids(world: dict[str, Any]) -> None:
    c, keys, rt = world["c"], world["keys"], world["rt"]
    facet = _facet(rt)
    full = rt.shards.get(partition_for(SCOPE.home, rt.shards.partitions))._db.execute(
        "SELECT evidence, source_event_id FROM memories WHERE memory_id = ?", (facet["memory_id"],)).fetchone()
    coder_ids = [*re.findall(r"mem_[0-9a-f]{32}", full["evidence"]), full["source_event_id"]]
    await login(c, keys["reviewer"])
    page = await c.get(f"/ui/memory/{facet['memory_id']}", params={"scope": REVIEWER.path})
    assert page.status_code == 200  # the reviewer may read the user's L4 (recall policy)
    assert "No evidence visible to this scope" in page.text  # the chain hides the coder's atoms ...
    leaked = [i for i in coder_ids if i and i in page.text]
    assert not leaked, f"the audit diff shows the coder agent's ids to the reviewer agent's key: {leaked}"


# -- F6 (minor): ids with a trailing newline pass checked_id (`$` matches before a final "\n") -----------------
async def test_an_id_with_a_trailing_newline_is_not_an_id(world: dict[str, Any]) -> None:
    c, keys = world["c"], world["keys"]
    await login(c, keys["agent"])
    r = await c.get("/ui/erase", params={"scope": SCOPE.path, "target": "session", "session_id": "s1\n"})
    assert r.status_code == 404  # today: 200, a confirmation page for a session "s1\n" of 0 memories


# -- F7 (UX): the review queue links another agent's memory under the page's agent scope: the link is a 404 ----
async def test_review_queue_links_open_memories_of_every_agent(world: dict[str, Any]) -> None:
    c, keys, rt = world["c"], world["keys"], world["rt"]
    item = next(r for r in _rows(rt) if r["agent_id"] == "reviewer" and r["layer"] == "L0")
    db = rt.shards.get(partition_for(SCOPE.home, rt.shards.partitions))._db
    db.execute("UPDATE memories SET trust_status = 'uncertain' WHERE memory_id = ?", (item["memory_id"],))
    db.commit()
    await login(c, keys["user"])
    queue = await c.get("/ui/review", params={"scope": SCOPE.path})  # the user's queue, opened from the coder
    link = re.search(r'href="(/ui/memory/' + item["memory_id"] + r'\?[^"]+)"', queue.text)
    assert link is not None
    opened = await c.get(link.group(1).replace("&amp;", "&"))
    assert opened.status_code == 200  # today: 404, the link carries scope=.../coder for a reviewer memory


# -- what held (kept as regression tests) ------------------------------------------------------------------------
async def test_held_cross_agent_reads_and_actions(world: dict[str, Any]) -> None:
    c, keys, rt = world["c"], world["keys"], world["rt"]
    coder_l0 = next(r for r in _rows(rt) if r["layer"] == "L0" and r["agent_id"] == "coder")
    csrf = await login(c, keys["reviewer"])
    for path, params in [(f"/ui/memory/{coder_l0['memory_id']}", {"scope": REVIEWER.path}),
                         ("/ui/erase", {"scope": REVIEWER.path, "target": "memory",
                                        "memory_id": coder_l0["memory_id"]})]:
        r = await c.get(path, params=params)
        assert r.status_code == 404 and coder_l0["content"] not in r.text
    count = await c.get("/ui/erase", params={"scope": REVIEWER.path, "target": "session", "session_id": "s1"})
    assert re.search(r'id="erase-count">0<', count.text)  # the coder's s1 is not counted for the reviewer
    for action, form in [("/ui/pin", {"memory_id": coder_l0["memory_id"]}),
                         ("/ui/review", {"item_id": coder_l0["memory_id"], "decision": "approve"}),
                         ("/ui/rollback", {"decision_id": "prop_x", "confirm": "yes"})]:
        r = await c.post(action, data={"csrf": csrf, "scope": REVIEWER.path, **form})
        assert r.status_code in (403, 404)
    scopes = await c.get("/ui/scopes")
    assert "acme/platform/dana/coder" not in scopes.text


async def test_held_reflected_values_are_escaped_and_bad_input_is_not_a_500(world: dict[str, Any]) -> None:
    c, keys = world["c"], world["keys"]
    await login(c, keys["user"])
    evil = '"><svg/onload=alert(1)>'
    for path, params in [("/ui/memories", {"scope": SCOPE.path, "q": evil}),
                         ("/ui/memories", {"scope": SCOPE.path, "kind": evil}),
                         ("/ui/memories", {"scope": evil + "/a/b/c"}),
                         ("/ui/memories", {"scope": SCOPE.path, "q": "\"NEAR(a* OR ) \x00 \U0001F600"}),
                         (f"/ui/memory/{evil}", {"scope": SCOPE.path}),
                         (f"/ui/governance/{evil}", {"scope": SCOPE.path}),
                         ("/ui/erase", {"scope": SCOPE.path, "target": "session", "session_id": evil})]:
        r = await c.get(path, params=params)
        assert r.status_code < 500 and "<svg/onload" not in r.text
