"""The memory browser through its ASGI app (no socket, no browser): logins, scope rules, CSRF, escaping and the
pages' content. The real-browser walk is tests/e2e/test_browser.py."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from html import unescape
from pathlib import Path

import httpx
import pytest

from altm.core import Scope
from altm.core.settings import Settings
from altm.store import MemoryQueries
from tests.support.browser import browser_world, login
from tests.support.turns import SCOPE, make_turn

OTHER = Scope.parse("globex/ops/sam/coder")
PAYLOAD = '<script>alert("x")</script><img src=x onerror="alert(1)"> We decided to deploy on Fridays.'
Client = tuple[httpx.AsyncClient, dict[str, str], dict[str, str]]


@pytest.fixture
async def browser(settings: Settings, tmp_path: Path) -> AsyncIterator[Client]:
    turns = [make_turn(1, "We're migrating the billing service from Flask to FastAPI.", session="s1"),
             make_turn(2, "The billing deadline is December 15.", session="s1"),
             make_turn(3, PAYLOAD, session="s2"),
             make_turn(4, "Globex deploys on Fridays.", scope=OTHER, session="g1")]
    async with browser_world(settings, tmp_path, turns) as world:
        ids = {row["content"]: row["memory_id"] for row in MemoryQueries(world.runtime.shards).listing(None, limit=500)}
        yield world.client, world.keys, ids


def _l0(ids: dict[str, str], content: str) -> str:
    return ids[content]


async def test_pages_need_a_login_and_the_cookie_is_httponly_and_strict(browser: Client) -> None:
    c, keys, _ = browser
    r = await c.get("/ui/memories", params={"scope": SCOPE.path})
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    bad = await c.post("/ui/login", data={"api_key": "altm_wrong"})
    assert bad.status_code == 401 and "unknown API key" in bad.text
    r = await c.post("/ui/login", data={"api_key": keys["user"]})
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    assert keys["user"] not in r.headers["set-cookie"]  # the browser holds a login token, never the key
    page = await c.get("/ui/scopes")
    assert page.status_code == 200 and SCOPE.path in page.text and OTHER.path not in page.text
    assert "script-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"


async def test_memory_content_is_escaped_and_no_script_reaches_a_page(browser: Client) -> None:
    c, keys, ids = browser
    await login(c, keys["user"])
    listing = await c.get("/ui/memories", params={"scope": SCOPE.path, "layer": "L0"})
    detail = await c.get(f"/ui/memory/{_l0(ids, PAYLOAD)}", params={"scope": SCOPE.path})
    for page in (listing, detail):
        assert page.status_code == 200
        assert "<script" not in page.text and "<img" not in page.text
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text
    assert 'onerror=&#34;alert(1)&#34;' in detail.text


async def test_a_memory_page_shows_verdict_lifecycle_evidence_graph_and_audit(browser: Client) -> None:
    c, keys, _ = browser
    await login(c, keys["user"])
    atoms = await c.get("/ui/memories", params={"scope": SCOPE.path, "layer": "L2"})
    atom_id = re.findall(r'href="/ui/memory/(mem_[0-9a-f]+)\?', atoms.text)[0]
    page = (await c.get(f"/ui/memory/{atom_id}", params={"scope": SCOPE.path})).text
    for section in ('id="trust"', 'id="lifecycle"', 'id="evidence"', 'id="graph"', 'id="audit"'):
        assert section in page
    assert 'class="evidence-link"' in page and '<span class="layer L0">L0</span>' in page  # evidence down to L0
    assert "<svg" in page and "<circle" in page  # the drawn neighbourhood
    assert re.search(r"<td>extract</td><td>insert memories</td>", page)  # the audit row of its creation
    search = await c.get("/ui/memories", params={"scope": SCOPE.path, "q": "billing deadline"})
    assert "December 15" in search.text


async def test_scope_rules_are_the_apis(browser: Client) -> None:
    c, keys, ids = browser
    await login(c, keys["globex"])
    foreign = await c.get(f"/ui/memory/{_l0(ids, PAYLOAD)}", params={"scope": SCOPE.path})
    assert foreign.status_code == 403 and "limited to 'globex'" in unescape(foreign.text)
    assert SCOPE.path not in foreign.text
    # a foreign id inside one's own scope answers exactly like an unknown one
    own = OTHER.path
    hidden = await c.get(f"/ui/memory/{_l0(ids, PAYLOAD)}", params={"scope": own})
    unknown = await c.get("/ui/memory/mem_00000000000000000000000000000000", params={"scope": own})
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.text.replace(_l0(ids, PAYLOAD), "X") == unknown.text.replace("mem_" + "0" * 32, "X")
    await login(c, keys["agent"])
    refused = await c.get("/ui/review", params={"scope": SCOPE.path})
    assert refused.status_code == 403 and "needs a user key" in refused.text
    other_agent = await c.get("/ui/memories", params={"scope": "acme/platform/dana/reviewer"})
    assert other_agent.status_code == 403
    junk = await c.get("/ui/memory/%3Cscript%3E", params={"scope": SCOPE.path})
    assert junk.status_code == 404 and "<script>" not in junk.text


async def test_form_posts_need_the_logins_csrf_token(browser: Client) -> None:
    c, keys, ids = browser
    csrf = await login(c, keys["user"])
    target = _l0(ids, PAYLOAD)
    form = {"scope": SCOPE.path, "target": "memory", "memory_id": target, "confirm": "yes"}
    forged = await c.post("/ui/erase", data=form)
    assert forged.status_code == 403 and "CSRF" in forged.text
    wrong = await c.post("/ui/erase", data={**form, "csrf": "x" * len(csrf)})
    assert wrong.status_code == 403
    unconfirmed = await c.post("/ui/erase", data={**form, "confirm": "", "csrf": csrf})
    assert unconfirmed.status_code == 422 and "confirmation" in unconfirmed.text
    done = await c.post("/ui/erase", data={**form, "csrf": csrf})
    assert done.status_code == 202 and "queued" in done.text.lower()
    # a session's login cannot post for another: the token of one login is refused in the next
    await login(c, keys["user"])
    assert (await c.post("/ui/erase", data={**form, "csrf": csrf})).status_code == 403


async def test_the_erase_confirmation_counts_what_a_session_erasure_removes(browser: Client) -> None:
    c, keys, _ = browser
    await login(c, keys["agent"])
    page = await c.get("/ui/erase", params={"scope": SCOPE.path, "target": "session", "session_id": "s1"})
    assert page.status_code == 200
    count = re.search(r'id="erase-count">(\d+)<', page.text)
    assert count is not None and int(count.group(1)) >= 2
    user = await c.get("/ui/erase", params={"scope": SCOPE.path, "target": "user"})
    assert user.status_code == 403  # an agent key may not erase the whole user


async def test_logout_ends_the_login(browser: Client) -> None:
    c, keys, _ = browser
    csrf = await login(c, keys["user"])
    assert (await c.post("/ui/logout", data={"csrf": csrf})).status_code == 303
    assert (await c.get("/ui/scopes")).status_code == 303
