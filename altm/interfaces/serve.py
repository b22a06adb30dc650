"""Long-running processes: the HTTP API and the MCP server over a deployment (the embedded pipeline in this
process, or a Kafka deployment's retrieval service)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from altm.app import NotFound, ScopeDenied
from altm.app.stats import collect_stats
from altm.core import Settings
from altm.interfaces.http import ApiKey, BodyLimit, KeyStore, create_app
from altm.interfaces.mcp import SESSION_IDLE_S, Profile, SessionsPerKey, build_server
from altm.store import DataDirError, ShardError
from altm.wiring import Deployment, configure_tracing, open_deployment, record_deployment, resolve

log = logging.getLogger("altm.serve")
ASGIApp = Callable[[MutableMapping[str, Any], Callable[..., Any], Callable[..., Any]], Awaitable[None]]
_CURRENT_KEY: contextvars.ContextVar[ApiKey | None] = contextvars.ContextVar("altm_api_key", default=None)


def keystore(settings: Settings) -> KeyStore:
    return KeyStore(Path(settings.data_dir) / "api_keys.json")


def _stats_for(settings: Settings, settle: Callable[[], object]) -> Callable[[], Awaitable[dict[str, Any]]] | None:
    """The stats route's reader; ``settle`` runs on the loop when it has read (the shards' owner tries again what
    the read held off: an erasure's truncation of a write-ahead log, as after a read of the app's pool)."""
    if not (settings.bus or "").startswith("sqlite:///"):
        return None  # a Kafka deployment's data dir has no embedded log to count

    async def stats() -> dict[str, Any]:
        try:  # it reads every shard: off the event loop that runs the pipeline
            return await asyncio.to_thread(collect_stats, Path(settings.data_dir), settings.topic_prefix)
        except (DataDirError, ShardError) as exc:
            raise NotFound(f"stats are not available yet: {exc}") from None
        finally:
            try:  # what it held off is the shards' to retry: its failing does not take the stats' answer
                settle()
            except Exception:
                log.exception("the shards could not retry what a stats read held off")

    return stats


def _replay_for(deployment: Deployment) -> Callable[[], Awaitable[dict[str, Any]]] | None:
    runtime = deployment.runtime
    if runtime is None:
        return None

    async def replay() -> dict[str, Any]:
        names = runtime.processor_names  # every processor re-reads its input from offset 0
        await runtime.rewind(names)
        return {"rewound": names, "note": "re-derivation runs in the background pipeline"}

    return replay


async def _serving(settings: Settings) -> Deployment:
    """The embedded pipeline in the background, or (on Kafka) the retrieval service of the deployment."""
    settings = resolve(settings)
    configure_tracing(settings)
    kafka = (settings.bus or "").startswith("kafka://")
    deployment = await open_deployment(settings, pipeline=not kafka)
    await deployment.start(background=True)
    if kafka:
        record_deployment(settings)
    return deployment


async def serve_http(settings: Settings, host: str, port: int) -> None:
    import uvicorn

    keys = keystore(settings)
    if not len(keys):
        log.warning("no API keys yet: every request will get 401; create one with `altm keys create`")
    deployment = await _serving(settings)
    try:
        api = create_app(deployment.app, keys, _stats_for(deployment.settings, deployment.shards.settle),
                         max_body_bytes=deployment.settings.max_request_bytes)
        await uvicorn.Server(uvicorn.Config(api, host=host, port=port, log_level="info")).serve()
    finally:
        await deployment.close()


def _key_middleware(app: ASGIApp, keys: KeyStore) -> ASGIApp:
    async def middleware(scope: MutableMapping[str, Any], receive: Callable[..., Any],
                         send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        # latin-1, as Starlette reads headers: one byte over 0x7F in any header was a 500
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        token = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
        key = keys.lookup(token) if token else None
        if key is None:
            body = b'{"error": "unauthorized", "message": "an API key is required (Authorization: Bearer <key>)"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        # the SDK binds a session to the principal that opened it: another key's request on it answers 404
        scope["user"] = AuthenticatedUser(AccessToken(token=key.sha256, client_id=key.sha256, scopes=[]))
        token_ctx = _CURRENT_KEY.set(key)
        try:
            await app(scope, receive, send)
        finally:
            _CURRENT_KEY.reset(token_ctx)

    return middleware


def _current_key() -> ApiKey:
    key = _CURRENT_KEY.get()
    if key is None:  # the key middleware answers 401 first; never serve a request as the trusted caller
        raise ScopeDenied("an API key is required")
    return key


async def serve_mcp(settings: Settings, profile: Profile, transport: str, host: str, port: int) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the stdio protocol channel
    deployment = await _serving(settings)
    try:
        kwargs: dict[str, Any] = {"stats": _stats_for(deployment.settings, deployment.shards.settle),
                                  "replay": _replay_for(deployment)}
        if transport == "stdio":
            await build_server(deployment.app, profile, **kwargs).run_stdio_async()
            return
        import uvicorn

        server = build_server(deployment.app, profile, caller=_current_key, **kwargs)
        limit = deployment.settings.max_request_bytes
        mcp_app = server.streamable_http_app(host=host, max_request_body_size=limit,
                                             session_idle_timeout=SESSION_IDLE_S)
        open_sessions = server.session_manager._server_instances  # the SDK's table: whether a session is open
        sessions = SessionsPerKey(BodyLimit(mcp_app, limit), lambda session: session in open_sessions)
        app = _key_middleware(sessions, keystore(settings))
        await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()
    finally:
        await deployment.close()
