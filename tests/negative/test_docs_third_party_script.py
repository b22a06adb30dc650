"""The API's documentation pages run third-party script on the memory browser's origin.

What a user expects: the memory browser's pages "carry a Content-Security-Policy that allows no script at all
and nothing from anywhere but the server; the stylesheet ships in the package" (README, "The memory browser"),
and the project allows no CDN links: assets ship in the package. ``altm serve`` binds to loopback and is meant
to work with nothing outside reachable.

Actual: the same app serves FastAPI's default ``/docs`` (Swagger UI) and ``/redoc``, whose HTML loads
``https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js`` (a floating major version, no
Subresource Integrity), ``redoc@2`` from the same CDN, Google Fonts and a favicon from fastapi.tiangolo.com, and
carries no Content-Security-Policy and no ``X-Frame-Options``. That script runs on the *same origin* as
``/ui``: a same-origin ``fetch('/ui/scopes')`` sends the HttpOnly, SameSite=Strict login cookie (path ``/ui``),
reads any page and its CSRF token, and posts ``/ui/erase`` from a page of this server — so whoever serves (or
compromises) that CDN path can read and erase the memories of anyone logged into the browser who opens the
API docs, and an API key typed into Swagger's "Authorize" box is handed to that script too. The browser's
no-script CSP protects only the pages under ``/ui``. Offline (loopback deployments) ``/docs`` is blank.

Suspected cause: ``altm/interfaces/http/_app.py`` ``create_app`` builds ``FastAPI(...)`` with the default
``docs_url``/``redoc_url`` (CDN assets) and adds no security headers outside ``/ui``.
Fix direction: serve Swagger UI's assets from the package (``get_swagger_ui_html(swagger_js_url=...)``) with a
CSP, or turn ``docs_url``/``redoc_url`` off and keep ``/openapi.json``.
"""

from __future__ import annotations

import re
from pathlib import Path

from altm.core.settings import Settings
from tests.support.browser import browser_world
from tests.support.turns import make_turn


async def test_no_page_of_the_server_loads_anything_from_another_origin(settings: Settings, tmp_path: Path
                                                                         ) -> None:
    async with browser_world(settings, tmp_path, [make_turn(1, "We deploy on Fridays.")]) as w:
        c = w.client
        assert (await c.get("/openapi.json")).status_code == 200  # the schema itself stays published
        for path in ("/docs", "/redoc"):
            r = await c.get(path)
            if r.status_code == 404:
                continue  # not served at all: fine
            assert r.status_code == 200
            foreign = re.findall(r'(?:src|href)\s*=\s*["\'](https?://[^"\']+)', r.text)
            # actual: cdn.jsdelivr.net swagger-ui-bundle.js / redoc.standalone.js, fonts.googleapis.com, ...
            assert not foreign, f"{path} loads from other origins: {foreign}"
            csp = r.headers.get("content-security-policy", "")
            assert "frame-ancestors 'none'" in csp or r.headers.get("x-frame-options") == "DENY", (
                f"{path} (same origin as /ui) carries no CSP / framing policy")
