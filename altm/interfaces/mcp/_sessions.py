"""Streamable-HTTP MCP sessions bounded per API key: a key that opens one more than it may hold has its least
recently used session ended, as a DELETE from its client would end it (the memory browser bounds logins per key
the same way). The MCP SDK bounds sessions per server only: one key that opened them all locked every other
tenant out until they idled away (``tests/negative/test_mcp_sessions_per_key.py``).

Which sessions are open is the SDK's word (``live``), asked whenever a key opens one: a session its client
ended, that idled out (the SDK counts idle time only while no request or stream of it is open) or that crashed is
gone there, and so here."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

log = logging.getLogger("altm.mcp")
ASGIApp = Callable[[MutableMapping[str, Any], Callable[..., Any], Callable[..., Any]], Awaitable[None]]
SESSION_HEADER = "mcp-session-id"
MAX_SESSIONS_PER_KEY = 16
SESSION_IDLE_S = 30 * 60.0
"""How long a session lasts without a request or an open stream (given to the SDK)."""


def _header(scope: MutableMapping[str, Any], name: str) -> str | None:
    for key, value in scope.get("headers", []):
        if key.decode("latin-1").lower() == name:
            return str(value.decode("latin-1"))
    return None


def _owner(scope: MutableMapping[str, Any]) -> str | None:
    """The key a request was made with (the key middleware names it in ``scope["user"]``)."""
    user = scope.get("user")
    token = getattr(user, "access_token", None)
    client = getattr(token, "client_id", None)
    return client if isinstance(client, str) else None


class SessionsPerKey:
    """ASGI middleware in front of the SDK's streamable-HTTP app (served at ``path``), behind the key middleware.
    ``live(session_id)``: whether the SDK holds that session open."""

    def __init__(self, app: ASGIApp, live: Callable[[str], bool], *, path: str = "/mcp",
                 limit: int = MAX_SESSIONS_PER_KEY) -> None:
        self._app = app
        self._live = live
        self._path = path
        self._limit = limit
        self._opened: dict[str, OrderedDict[str, None]] = {}  # key → its sessions, least recently used first
        self._locks: dict[str, asyncio.Lock] = {}  # one key's sessions are counted one opening at a time

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:
        owner = _owner(scope) if scope["type"] == "http" else None
        if owner is None:
            await self._app(scope, receive, send)
            return
        session = _header(scope, SESSION_HEADER)
        if session is not None:
            sessions = self._opened.get(owner)
            if sessions is not None and session in sessions:
                sessions.move_to_end(session)  # used: the last to go
            await self._app(scope, receive, send)
            return
        await self._opening(owner, scope, receive, send)

    def _held(self, owner: str) -> OrderedDict[str, None]:
        """``owner``'s sessions the SDK still holds open."""
        sessions = self._opened.get(owner)
        if sessions is None:
            return OrderedDict()
        for gone in [s for s in sessions if not self._live(s)]:
            del sessions[gone]
        if not sessions:
            del self._opened[owner]
        return sessions

    async def _admit(self, owner: str, session: str, scope: MutableMapping[str, Any]) -> None:
        async with self._locks.setdefault(owner, asyncio.Lock()):
            sessions = self._held(owner)
            sessions[session] = None
            self._opened[owner] = sessions
            while len(sessions) > self._limit:
                oldest = next(iter(sessions))
                log.info("a key holds %d MCP sessions: its least recently used one ends for a new one", self._limit)
                await self._end(scope, oldest)
                sessions.pop(oldest, None)

    async def _end(self, scope: MutableMapping[str, Any], session: str) -> None:
        """A DELETE of ``session`` on the MCP route, as its own client would send it (the same key and host)."""
        headers = [(k, v) for k, v in scope.get("headers", [])
                   if k.decode("latin-1").lower() not in (SESSION_HEADER, "content-length", "content-type")]
        ending = {**scope, "method": "DELETE", "path": self._path, "raw_path": self._path.encode(),
                  "query_string": b"", "headers": [*headers, (SESSION_HEADER.encode(), session.encode())]}

        async def nothing() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: MutableMapping[str, Any]) -> None:
            return None

        await self._app(ending, nothing, discard)
        if self._live(session):
            log.warning("an MCP session a key held over its %d did not end when asked", self._limit)

    async def _opening(self, owner: str, scope: MutableMapping[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:
        """Serve a request without a session (an ``initialize`` opens one). When it opened one, the key's oldest
        sessions over its limit end before the response starts: its client never holds the new session id while
        the one it replaces still answers."""

        async def admitted(message: MutableMapping[str, Any]) -> None:
            if message.get("type") == "http.response.start" and int(message["status"]) < 400:
                made = [v.decode("latin-1") for k, v in message.get("headers", [])
                        if k.decode("latin-1").lower() == SESSION_HEADER]
                if made:
                    await self._admit(owner, made[0], scope)
            await send(message)

        await self._app(scope, receive, admitted)
