"""Review of the per-key MCP session cap (round 18): ``SessionsPerKey`` mirrors the SDK's idle timeout from the
*start* of a session's last request, and forgets the session once that is ``idle_s`` ago. The SDK ends a session
only after ``idle_s`` with *no request in flight*: an open GET (SSE) stream, or a long request, keeps it alive.
A key that holds a GET stream open on each of its sessions has them forgotten by the tracker after ``idle_s``
while the SDK keeps them, and opens 16 more, again and again (the server runs with ``idle_s`` lowered to 1.5 s
on both sides, as ``serve_mcp`` wires them: one value)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from altm.interfaces.access import KeyStore
from tests.negative.test_mcp_sessions_per_key import ACCEPT, INITIALIZE, mcp_server
from tests.support.processes import free_port

IDLE_S = 1.5
RUNNER = f"""
import sys
import altm.interfaces.serve as serve
serve.SESSION_IDLE_S = {IDLE_S}  # the SDK's idle timeout (the per-key cap asks the SDK which sessions are open)
from altm.interfaces.cli import main
sys.argv = ["altm", *sys.argv[1:]]
main()
"""
PROTO = {"mcp-protocol-version": "2025-06-18"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def _probe(url: str, auth: dict[str, str], sessions: list[str]) -> int:
    async with httpx.AsyncClient(timeout=10) as c:
        live = 0
        for s in sessions:
            r = await c.post(url, json=PING, headers={**auth, **PROTO, "mcp-session-id": s})
            live += r.status_code == 200
        return live


async def _scenario(url: str, auth: dict[str, str]) -> tuple[int, int]:
    from altm.interfaces.mcp import MAX_SESSIONS_PER_KEY

    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(url, json=INITIALIZE, headers=auth)
        assert r.status_code == 200, r.text[:200]
        first = r.headers["mcp-session-id"]
        await c.post(url, json=INITIALIZED, headers={**auth, **PROTO, "mcp-session-id": first})
        # a GET stream held open on the first session (server-to-client notifications, as MCP clients keep one)
        async with c.stream("GET", url, headers={**auth, **PROTO, "mcp-session-id": first,
                                                 "Accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            await asyncio.sleep(IDLE_S * 2)  # the tracker forgets it; the SDK keeps it (a request in flight)
            more = []
            for _ in range(MAX_SESSIONS_PER_KEY):
                r = await c.post(url, json=INITIALIZE, headers=auth)
                assert r.status_code == 200, r.text[:200]
                more.append(r.headers["mcp-session-id"])
            live = await _probe(url, auth, [first, *more])
        return live, MAX_SESSIONS_PER_KEY


def test_a_session_kept_alive_by_its_stream_still_counts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    key = KeyStore(data / "api_keys.json").create("acme-coder", "acme/platform/dana/coder")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with mcp_server(data, port, script=RUNNER):
        live, cap = asyncio.run(_scenario(url, {"Authorization": f"Bearer {key}", "Accept": ACCEPT}))
    # actual: 17 live sessions -- the streamed one was forgotten by the tracker but never ended by the SDK
    assert live <= cap, f"one key holds {live} live MCP sessions (cap {cap})"
