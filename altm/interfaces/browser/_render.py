"""Pages: Jinja2 templates shipped in the package, autoescaped (memory content is untrusted text), and the
headers every page carries: a Content-Security-Policy that allows no script at all and no resource from
anywhere but this server, no framing, no caching, no referrer."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # not no-referrer: that makes a browser send "Origin: null" on form posts
    "Cache-Control": "no-store",
}

_templates = Environment(loader=PackageLoader("altm.interfaces.browser", "templates"), autoescape=True,
                         undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    login = getattr(request.state, "login", None)
    html = _templates.get_template(template).render(
        key=getattr(request.state, "key", None), csrf=login.csrf if login is not None else "", **context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def error_page(request: Request, status: int, message: str) -> Response:
    """An error as a page (the browser's routes); the JSON API keeps its JSON errors."""
    return page(request, "error.html", status=status, status_code=status, message=message)
