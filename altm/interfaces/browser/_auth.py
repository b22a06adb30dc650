"""Who is browsing: the login form, the cookie, the dependency every page takes, and form posts checked against
the login's CSRF token. Scope rules are the API's: every page asks the same :class:`Gate`."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from altm.app import MemoryApp, ScopeDenied
from altm.interfaces.access import ApiKey, Gate
from altm.interfaces.browser._render import SECURITY_HEADERS, page
from altm.interfaces.browser._sessions import COOKIE, Login, Logins

FORM_TYPE = "application/x-www-form-urlencoded"


def _logins(request: Request) -> Logins:
    logins: Logins = request.app.state.logins
    return logins


def memory_of(request: Request) -> MemoryApp:
    memory: MemoryApp = request.app.state.memory
    return memory


async def read_form(request: Request) -> dict[str, str]:
    """A urlencoded form body (the body limit of the API applies); the first value of each field."""
    if request.headers.get("content-type", "").split(";")[0].strip() != FORM_TYPE:
        raise HTTPException(415, detail=f"a form post is {FORM_TYPE}")
    try:
        fields = parse_qs((await request.body()).decode(), keep_blank_values=True, max_num_fields=64)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HTTPException(400, detail=f"unreadable form: {exc}") from None
    return {name: values[0] for name, values in fields.items()}


def same_origin(request: Request) -> None:
    """A form post must come from a page of this server: a browser says where a request comes from
    (``Sec-Fetch-Site``, ``Origin``), and one from another site or another port of this host is refused — the
    login form included (a cross-site login would plant the attacker's key in the victim's browser)."""
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    if (site is not None and site not in ("same-origin", "none")) or (origin is not None and origin != own):
        raise ScopeDenied("a form of another site (or another port of this host) may not post here")


def signed_in(request: Request) -> tuple[ApiKey, Login]:
    """The caller's key and login; anyone else is sent to the login page."""
    found = _logins(request).find(request.cookies.get(COOKIE))
    if found is None:
        raise HTTPException(303, detail="log in first", headers={**SECURITY_HEADERS, "Location": "/ui/login"})
    request.state.key, request.state.login = found
    return found


Who = Annotated[tuple[ApiKey, Login], Depends(signed_in)]


def gate_of(request: Request, who: Who) -> Gate:
    return Gate(memory_of(request), who[0])


async def posted(request: Request, who: Who) -> dict[str, str]:
    """A form post of a logged-in person, from a page of this server, with its CSRF token checked."""
    same_origin(request)
    form = await read_form(request)
    if not Logins.csrf_ok(who[1], form.get("csrf")):
        raise ScopeDenied("the form is stale or was not sent by this page (CSRF token mismatch); reload and retry")
    return form


Browsing = Annotated[Gate, Depends(gate_of)]
Posted = Annotated[dict[str, str], Depends(posted)]

auth = APIRouter(prefix="/ui", include_in_schema=False)


@auth.get("/login")
async def login_form(request: Request) -> Response:
    return page(request, "login.html", error=None)


@auth.post("/login")
async def login(request: Request) -> Response:
    same_origin(request)
    form = await read_form(request)
    opened = _logins(request).open(form.get("api_key", "").strip(), replacing=request.cookies.get(COOKIE))
    if opened is None:
        return page(request, "login.html", status=401, error="unknown API key")
    token, _ = opened
    response = RedirectResponse("/ui/scopes", status_code=303, headers=SECURITY_HEADERS)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/ui",
                        secure=request.url.scheme == "https")
    return response


@auth.post("/logout")
async def logout(request: Request, form: Posted) -> Response:
    _logins(request).close(request.cookies.get(COOKIE))
    response = RedirectResponse("/ui/login", status_code=303, headers=SECURITY_HEADERS)
    response.delete_cookie(COOKIE, path="/ui")
    return response
