"""The streamable-HTTP MCP server ignores ``ALTM_MAX_REQUEST_BYTES`` (red team, MCP surface).

README ("API keys"): "Request bodies over ``ALTM_MAX_REQUEST_BYTES`` (1 MiB) answer 413", and the setting
says "Largest HTTP request body (413)". ``altm serve`` applies it (``BodyLimit`` in
``altm/interfaces/http/_limits.py``, ``create_app(..., max_body_bytes=settings.max_request_bytes)``), but
``serve_mcp`` (``altm/interfaces/serve.py``, ``server.streamable_http_app(host=host)``) passes no limit, so the
MCP SDK's own default of 4 MiB applies whatever the operator configured: every key holder may send bodies 4×
the documented limit (64× an operator's 64 KiB setting), each read whole into memory and parsed as JSON.

Expected: a body over the configured limit answers 413 on ``/mcp`` as on the HTTP API. Fix direction: pass
``max_request_body_size=settings.max_request_bytes`` to ``streamable_http_app`` (or wrap the app in
``BodyLimit``).
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from altm.interfaces.access import KeyStore
from tests.support.processes import altm_process, free_port

LIMIT = 64 * 1024


def test_a_body_over_the_configured_limit_answers_413(tmp_path: Path) -> None:
    data = tmp_path / "data"
    key = KeyStore(data / "api_keys.json").create("coder", "acme/platform/dana/coder")
    port = free_port()
    args = ["mcp-server", "--data-dir", str(data), "--profile", "runtime", "--transport", "streamable-http",
            "--port", str(port)]
    env = {**os.environ, "ALTM_MAX_REQUEST_BYTES": str(LIMIT)}
    with altm_process(args, port, env=env):
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "red-team", "version": "1", "padding": "x" * (4 * LIMIT)}}}
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
        r = httpx.post(f"http://127.0.0.1:{port}/mcp", json=initialize, headers=headers, timeout=30)
    # actual: 200 (the SDK's 4 MiB default applies); expected: 413, as `altm serve` answers
    assert r.status_code == 413, f"a {4 * LIMIT}-byte body over ALTM_MAX_REQUEST_BYTES={LIMIT} got {r.status_code}"
