"""Review of the per-key MCP session cap (altm/interfaces/mcp/_sessions.py), round 18.

``SessionsPerKey`` forgets a session whenever a request naming it answers 404, and ends (forgets) the key's least
recently used session before *any* POST without a session header, by a DELETE sent to that request's path. Neither
checks that the request reached the SDK's MCP endpoint, nor that a session was opened:

* ``GET /anything`` with ``mcp-session-id: <a live session>`` answers 404 from the router (no such route): the
  tracker forgets a session the SDK keeps alive, so one key opens as many sessions as it likes again and locks every
  other tenant out (the defect the cap was made for);
* a POST without a session header that opens nothing (not an initialize, a refused one) still ends one of the key's
  live sessions.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from altm.interfaces.access import KeyStore
from tests.negative.test_mcp_sessions_per_key import ACCEPT, INITIALIZE, mcp_server
from tests.support.processes import free_port

CAP = 24  # the SDK's global cap in RUNNER (the per-key cap is 16)
PROTO = {"mcp-protocol-version": "2025-06-18"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def test_a_404_off_the_mcp_route_does_not_free_a_live_session(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = KeyStore(data / "api_keys.json")
    hog = keys.create("acme-coder", "acme/platform/dana/coder")
    other = keys.create("globex-coder", "globex/ops/sam/coder")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with mcp_server(data, port), httpx.Client(timeout=30) as c:
        auth = {"Authorization": f"Bearer {hog}", "Accept": ACCEPT}
        opened = 0
        for _ in range(CAP + 5):
            r = c.post(f"{base}/mcp", json=INITIALIZE, headers=auth)
            if r.status_code != 200:
                break
            opened += 1
            # a request naming the session on a path the SDK does not serve: 404 from the router
            c.get(f"{base}/not-mcp", headers={**auth, "mcp-session-id": r.headers["mcp-session-id"]})
        victim = c.post(f"{base}/mcp", json=INITIALIZE,
                        headers={"Authorization": f"Bearer {other}", "Accept": ACCEPT})
    # actual: the tracker forgot every session on its 404; the key opens all CAP sessions, the other tenant gets 503
    assert victim.status_code == 200, (
        f"one key opened {opened} live sessions (per-key cap 16); another tenant's initialize answered "
        f"{victim.status_code} {victim.text[:120]}")


def test_a_post_that_opens_no_session_ends_none(tmp_path: Path) -> None:
    from altm.interfaces.mcp import MAX_SESSIONS_PER_KEY

    data = tmp_path / "data"
    key = KeyStore(data / "api_keys.json").create("acme-coder", "acme/platform/dana/coder")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = {"Authorization": f"Bearer {key}", "Accept": ACCEPT}
    with mcp_server(data, port), httpx.Client(timeout=30) as c:
        sessions = []
        for _ in range(MAX_SESSIONS_PER_KEY):
            r = c.post(url, json=INITIALIZE, headers=auth)
            assert r.status_code == 200, r.text[:200]
            sessions.append(r.headers["mcp-session-id"])
        stray = c.post(url, json=PING, headers=auth)  # no session header, not an initialize: opens nothing
        first = c.post(url, json=PING, headers={**auth, **PROTO, "mcp-session-id": sessions[0]})
    assert stray.status_code >= 400, stray.text[:200]
    # actual: 404 -- the stray request ended the key's least recently used session to make room for nothing
    assert first.status_code == 200, (first.status_code, first.text[:200])
