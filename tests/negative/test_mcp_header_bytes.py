"""A request header with a non-UTF-8 byte makes the streamable-HTTP MCP server answer 500 (red team, MCP
surface).

HTTP header values are bytes (RFC 9110 allows obs-text, 0x80-0xFF; ASGI passes them raw and Starlette, like
the HTTP API, decodes them as latin-1). ``_key_middleware`` (``altm/interfaces/serve.py``) decodes *every*
header of every request as UTF-8 before it looks for the key
(``{k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}``), so a request with a valid key
and one unrelated header such as ``X-Client-Name: caf\\xe9`` (a latin-1 client or proxy) raises
``UnicodeDecodeError``: 500 Internal Server Error with a traceback in the log, and the request is lost.

Expected: the key is read from its own header and other headers do not matter (decode as latin-1, or look up
the two header names on the raw bytes); a non-ASCII key answers 401. Fix direction: decode with latin-1 (as
Starlette does) or use ``starlette.datastructures.Headers(scope=scope)``.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import httpx

from altm.interfaces.access import KeyStore
from altm.interfaces.serve import _key_middleware


async def _ok(scope: MutableMapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"served"})


async def test_a_latin1_header_does_not_break_a_keyed_request(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "api_keys.json")
    key = keys.create("coder", "acme/platform/dana/coder")
    app = _key_middleware(_ok, keys)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        plain = await c.post("/mcp", headers={"Authorization": f"Bearer {key}"})
        assert plain.status_code == 200 and plain.text == "served"
        latin1 = await c.post("/mcp", headers={
            b"Authorization": f"Bearer {key}".encode(), b"X-Client-Name": b"caf\xe9"})
        unknown = await c.post("/mcp", headers={b"X-API-Key": b"altm_\xe9"})
    # actual: 500 for both (UnicodeDecodeError in the middleware)
    assert latin1.status_code == 200, f"a latin-1 header beside a valid key answered {latin1.status_code}"
    assert unknown.status_code == 401, f"a non-ASCII key answered {unknown.status_code}"
