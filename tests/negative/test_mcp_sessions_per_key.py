"""One key can take every streamable-HTTP MCP session of the server (red team of the interfaces, round 17).

``serve_mcp`` (altm/interfaces/serve.py:131) builds the streamable-HTTP app with the MCP SDK's defaults: at most
``DEFAULT_MAX_SESSIONS`` (10,000) stateful sessions per server, each kept until 30 minutes without a request. The
cap is global: ``_key_middleware`` binds a session to the key that opened it, but nothing bounds how many sessions
one key opens. Any key -- another tenant's agent key -- that sends 10,000 ``initialize`` requests (45 s from one
client on loopback, +340 MiB RSS) leaves the server answering every other tenant's ``initialize`` with
``503 Too many open sessions`` for the next 30 minutes. The memory browser bounds logins per key for exactly
this reason (README: "a key holds at most 16 logins at once, so no key holder can push other people's logins
out"); the MCP server does not.

Reproduced at full scale against ``altm mcp-server`` (10,000 sessions of one key, then another tenant's key: 503).
To stay fast, this test runs the same CLI in a child process with the SDK's session cap lowered to 24: one key
opens 24 sessions, and another tenant's key must still be able to open one.

Expected: sessions are bounded per key (as browser logins are), so one key cannot exhaust the server's sessions
for other keys.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from subprocess import Popen

import httpx

from altm.interfaces.access import KeyStore
from tests.support.processes import altm_process, free_port

CAP = 24
ACCEPT = "application/json, text/event-stream"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "red-team", "version": "1"}}}
# `altm mcp-server` with the SDK's global session cap lowered from 10,000 to CAP (nothing else changed)
RUNNER = f"""
import sys
from mcp.server import streamable_http_manager as m
_init = m.StreamableHTTPSessionManager.__init__
def _capped(self, *a, **kw):
    _init(self, *a, **kw)
    self.max_sessions = {CAP}
m.StreamableHTTPSessionManager.__init__ = _capped
from altm.interfaces.cli import main
sys.argv = ["altm", *sys.argv[1:]]
main()
"""


def mcp_server(data: Path, port: int, script: str | None = RUNNER) -> AbstractContextManager[Popen[bytes]]:
    """``altm mcp-server`` over streamable HTTP on ``port`` (by default through RUNNER: the SDK's cap lowered)."""
    return altm_process(["mcp-server", "--data-dir", str(data), "--profile", "runtime", "--transport",
                         "streamable-http", "--host", "127.0.0.1", "--port", str(port)], port, script=script)


def test_one_key_cannot_take_every_mcp_session(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = KeyStore(data / "api_keys.json")
    hog = keys.create("acme-coder", "acme/platform/dana/coder")
    other = keys.create("globex-coder", "globex/ops/sam/coder")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with mcp_server(data, port), httpx.Client(timeout=30) as c:
        opened = 0
        for _ in range(CAP + 5):
            r = c.post(url, json=INITIALIZE, headers={"Authorization": f"Bearer {hog}", "Accept": ACCEPT})
            if r.status_code != 200:
                break
            opened += 1
        victim = c.post(url, json=INITIALIZE, headers={"Authorization": f"Bearer {other}", "Accept": ACCEPT})
    # actual: the first key opens all CAP sessions, and the other tenant's key gets 503 "Too many open sessions"
    assert victim.status_code == 200, (
        f"after one key opened {opened} sessions, another tenant's initialize answered {victim.status_code} "
        f"{victim.text[:120]}")


def test_a_key_over_its_sessions_ends_its_least_recently_used_one(tmp_path: Path) -> None:
    """Opening one session more than a key may hold ends that key's least recently used session in the SDK too
    (the next request on it: 404, as after a DELETE), and leaves the others working."""
    from altm.interfaces.mcp import MAX_SESSIONS_PER_KEY

    data = tmp_path / "data"
    key = KeyStore(data / "api_keys.json").create("acme-coder", "acme/platform/dana/coder")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = {"Authorization": f"Bearer {key}", "Accept": ACCEPT}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    with mcp_server(data, port, script=None), httpx.Client(timeout=30) as c:
        sessions = []
        for _ in range(MAX_SESSIONS_PER_KEY + 1):
            r = c.post(url, json=INITIALIZE, headers=auth)
            assert r.status_code == 200, r.text[:200]
            sessions.append(r.headers["mcp-session-id"])
        first = c.post(url, json=ping, headers={**auth, "mcp-session-id": sessions[0],
                                                "mcp-protocol-version": "2025-06-18"})
        second = c.post(url, json=ping, headers={**auth, "mcp-session-id": sessions[1],
                                                 "mcp-protocol-version": "2025-06-18"})
        last = c.post(url, json=ping, headers={**auth, "mcp-session-id": sessions[-1],
                                               "mcp-protocol-version": "2025-06-18"})
    assert first.status_code == 404, (first.status_code, first.text[:200])  # ended for the newest
    assert second.status_code == 200 and last.status_code == 200, (second.text[:200], last.text[:200])
