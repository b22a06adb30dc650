"""Streamable-HTTP MCP sessions bounded per API key: opening one more than a key may hold ends that key's least
recently used session, as a DELETE from its client would (the memory browser bounds logins per key the same way).
The MCP SDK bounds sessions per server only: one key that opened them all locked every other tenant out until
they idled away (``tests/negative/test_mcp_sessions_per_key.py``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

log = logging.getLogger("altm.mcp")
ASGIApp = Callable[[MutableMapping[str, Any], Callable[..., Any], Callable[..., Any]], Awaitable[None]]
SESSION_HEADER = "mcp-session-id"
MAX_SESSIONS_PER_KEY = 16
SESSION_IDLE_S = 30 * 60.0
"""How long a session lasts without a request (given to the SDK, which ends it then, and mirrored here)."""


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
    """ASGI middleware in front of the SDK's streamable-HTTP app, behind the key middleware."""

    def __init__(self, app: ASGIApp, *, limit: int = MAX_SESSIONS_PER_KEY, idle_s: float = SESSION_IDLE_S) -> None:
        self._app = app
        self._limit = limit
        self._idle_s = idle_s
        self._open: dict[str, OrderedDict[str, float]] = {}  # key → session id → last request (monotonic)
        self._locks: dict[str, asyncio.Lock] = {}  # a key's sessions are opened one at a time (keys side by side)

    def held(self, owner: str) -> int:
        """How many sessions ``owner`` holds open (as far as this middleware saw them)."""
        self._expire(owner)
        return len(self._open.get(owner, ()))

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:
        owner = _owner(scope) if scope["type"] == "http" else None
        if owner is None:
            await self._app(scope, receive, send)
            return
        session = _header(scope, SESSION_HEADER)
        if session is None and scope.get("method") == "POST":
            await self._open_one(owner, scope, receive, send)
            return
        sessions = self._open.get(owner)
        if session is not None and sessions is not None and session in sessions:
            sessions[session] = time.monotonic()
            sessions.move_to_end(session)
        status = await self._served(scope, receive, send)
        if session is not None and sessions is not None and (
                status == 404 or (scope.get("method") == "DELETE" and status is not None and status < 400)):
            sessions.pop(session, None)  # ended by its client, or by the SDK (idle, crashed)

    async def _open_one(self, owner: str, scope: MutableMapping[str, Any], receive: Callable[..., Any],
                        send: Callable[..., Any]) -> None:
        async with self._locks.setdefault(owner, asyncio.Lock()):
            await self._make_room(owner, scope)
            made: list[str] = []
            status = await self._served(scope, receive, send, made)
            if made and status is not None and status < 400:
                self._open.setdefault(owner, OrderedDict())[made[0]] = time.monotonic()

    async def _make_room(self, owner: str, scope: MutableMapping[str, Any]) -> None:
        """While ``owner`` holds ``limit`` sessions, end its least recently used one."""
        self._expire(owner)
        sessions = self._open.get(owner)
        while sessions is not None and len(sessions) >= self._limit:
            oldest, _ = sessions.popitem(last=False)
            log.info("a key holds %d MCP sessions: its least recently used one ends for a new one", self._limit)
            await self._end(scope, oldest)

    def _expire(self, owner: str) -> None:
        sessions = self._open.get(owner)
        if sessions is None:
            return
        cutoff = time.monotonic() - self._idle_s
        for session in [s for s, at in sessions.items() if at < cutoff]:
            del sessions[session]  # the SDK ended it then too
        if not sessions:
            del self._open[owner]

    async def _end(self, scope: MutableMapping[str, Any], session: str) -> None:
        """A DELETE of ``session`` as its own client would send it (the same key, path and host)."""
        headers = [(k, v) for k, v in scope.get("headers", [])
                   if k.decode("latin-1").lower() not in (SESSION_HEADER, "content-length", "content-type")]
        ending = {**scope, "method": "DELETE", "headers": [*headers, (SESSION_HEADER.encode(), session.encode())]}

        async def nothing() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: MutableMapping[str, Any]) -> None:
            return None

        await self._app(ending, nothing, discard)

    async def _served(self, scope: MutableMapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any],
                      made: list[str] | None = None) -> int | None:
        """Serve the request; its response status (None when none was sent), and the session id it opened in
        ``made``."""
        status: list[int] = []

        async def watched(message: MutableMapping[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                status.append(int(message["status"]))
                if made is not None:
                    made.extend(v.decode("latin-1") for k, v in message.get("headers", [])
                                if k.decode("latin-1").lower() == SESSION_HEADER)
            await send(message)

        await self._app(scope, receive, watched)
        return status[0] if status else None
