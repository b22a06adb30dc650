"""A streamable-HTTP MCP session is not bound to the key that opened it (red team, MCP surface).

Over streamable HTTP every request carries an API key, and ``_key_middleware`` (``altm/interfaces/serve.py``)
only checks that the key exists; it does not tell the MCP SDK who the caller is (``scope["user"]``), so the
SDK's session manager, which refuses "a session … used with [a] credential [other than] the one that created
the session" (``_session_owners``), sees every caller as anonymous. Any holder of any key — another tenant's
agent key — who learns a session id (the ``mcp-session-id`` header, logged by proxies and by the SDK at INFO)
can end that session with ``DELETE /mcp`` or send requests into it; the tool calls themselves still run
under the sender's own key, but the owner's session is gone.

Expected: a request with another key on an existing session answers as if the session did not exist (404),
and the session keeps working for its owner. Fix direction: set ``scope["user"]`` to an authenticated user
derived from the key (the SDK binds sessions to it), or keep a session-id → key-digest map in the middleware.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from altm.interfaces.access import KeyStore
from tests.support.processes import altm_process, free_port

ACCEPT = "application/json, text/event-stream"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "red-team", "version": "1"}}}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def test_another_tenants_key_cannot_end_a_session(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = KeyStore(data / "api_keys.json")
    acme = keys.create("acme-coder", "acme/platform/dana/coder")
    globex = keys.create("globex-coder", "globex/ops/sam/coder")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    args = ["mcp-server", "--data-dir", str(data), "--profile", "runtime", "--transport", "streamable-http",
            "--port", str(port)]
    with altm_process(args, port), httpx.Client(timeout=30) as c:
        owner = {"Authorization": f"Bearer {acme}", "Accept": ACCEPT}
        opened = c.post(url, json=INITIALIZE, headers=owner)
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        owner = {**owner, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
        c.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=owner)
        intruder = {**owner, "Authorization": f"Bearer {globex}"}
        ended = c.delete(url, headers=intruder)
        still = c.post(url, json=LIST_TOOLS, headers=owner)
    # actual: the DELETE with globex's key answers 200 and acme's session is gone (404 for its owner)
    assert ended.status_code == 404, f"another tenant's key ended the session: DELETE answered {ended.status_code}"
    assert still.status_code == 200, f"the owner's session is gone: {still.status_code} {still.text[:200]}"
