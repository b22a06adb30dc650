"""The memory browser: server-rendered pages under ``/ui`` of the HTTP service, for people who need to see and
correct what an agent remembers. Same API keys and scope rules as the API (one :class:`Gate`); a login holds the
key's digest server-side; no script runs in any page; every value is escaped."""

from fastapi import FastAPI
from starlette.requests import Request

from altm.interfaces.access import KeyStore
from altm.interfaces.browser._actions import actions
from altm.interfaces.browser._auth import auth
from altm.interfaces.browser._pages import pages
from altm.interfaces.browser._render import error_page
from altm.interfaces.browser._sessions import Logins

PATH = "/ui"


def install_browser(api: FastAPI, keys: KeyStore) -> None:
    """Serve the browser's pages on ``api`` (the API's keys; logins held in this process)."""
    api.state.logins = Logins(keys)
    for router in (auth, pages, actions):
        api.include_router(router)


def is_browser(request: Request) -> bool:
    return request.url.path == PATH or request.url.path.startswith(PATH + "/")


__all__ = ["PATH", "Logins", "error_page", "install_browser", "is_browser"]
