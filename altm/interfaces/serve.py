"""Long-running processes: the HTTP API and the MCP server, each with the embedded pipeline in-process."""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from altm.app.protocol import MemoryApp, ScopeDenied
from altm.app.stats import collect_stats
from altm.core import Event, Scope
from altm.core.settings import Settings
from altm.interfaces.http import ApiKey, KeyStore, create_app
from altm.interfaces.mcp import Profile, build_server
from altm.pipeline._stage import host_record
from altm.pipeline.runtime import EmbeddedRuntime
from altm.wiring._open import embedded_app

log = logging.getLogger("altm.serve")
ASGIApp = Callable[[MutableMapping[str, Any], Callable[..., Any], Callable[..., Any]], Awaitable[None]]
_CURRENT_KEY: contextvars.ContextVar[ApiKey | None] = contextvars.ContextVar("altm_api_key", default=None)


def keystore(settings: Settings) -> KeyStore:
    return KeyStore(settings.data_dir / "api_keys.json")


def _stats_for(settings: Settings) -> Callable[[], Awaitable[dict[str, Any]]]:
    async def stats() -> dict[str, Any]:
        return collect_stats(settings.data_dir, settings.topic_prefix)

    return stats


def _replay_for(runtime: EmbeddedRuntime) -> Callable[[], Awaitable[dict[str, Any]]]:
    async def replay() -> dict[str, Any]:
        names = [p.name for p in runtime._processors]  # every processor re-reads its input from offset 0
        await runtime.rewind(names)
        return {"rewound": names, "note": "re-derivation runs in the background pipeline"}

    return replay


async def serve_http(settings: Settings, host: str, port: int) -> None:
    import uvicorn

    keys = keystore(settings)
    if not len(keys):
        log.warning("no API keys yet: every request will get 401; create one with `altm keys create`")
    if settings.broker:
        async with kafka_app(settings) as memory:
            api = create_app(memory, keys, _stats_for(settings) if _has_log(settings) else None)
            await uvicorn.Server(uvicorn.Config(api, host=host, port=port, log_level="info")).serve()
        return
    async with embedded_app(settings, background=True) as (_, memory):
        api = create_app(memory, keys, _stats_for(settings))
        await uvicorn.Server(uvicorn.Config(api, host=host, port=port, log_level="info")).serve()


def _has_log(settings: Settings) -> bool:
    return (settings.data_dir / "log.db").exists()


@asynccontextmanager
async def kafka_app(settings: Settings) -> AsyncIterator[MemoryApp]:
    """The retrieval service of a Kafka deployment: reads the workers' shards and vector index, publishes
    turns and control events to Kafka (the workers derive memory from them)."""
    from altm.bus.kafka import KafkaBus
    from altm.pipeline.runtime._resources import choose_embedder, open_vector_index
    from altm.recall.retrieval import Retriever
    from altm.store import ShardSet

    bus = KafkaBus(settings.broker or "")
    await bus.start()
    shards = ShardSet(settings.data_dir, settings.partitions)
    embedder = choose_embedder(settings)
    vectors = open_vector_index(settings, embedder) if embedder is not None else None

    async def publish(events: Sequence[Event]) -> None:
        await bus.publish_many([host_record(settings, e) for e in events])

    try:
        yield MemoryApp(settings, shards, Retriever(shards, embedder, vectors), publish)
    finally:
        if vectors is not None:
            vectors.close()
        shards.close()
        await bus.stop()


def _key_middleware(app: ASGIApp, keys: KeyStore) -> ASGIApp:
    async def middleware(scope: MutableMapping[str, Any], receive: Callable[..., Any],
                         send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        token = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
        key = keys.lookup(token) if token else None
        if key is None:
            body = b'{"error": "unauthorized", "message": "an API key is required (Authorization: Bearer <key>)"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        token_ctx = _CURRENT_KEY.set(key)
        try:
            await app(scope, receive, send)
        finally:
            _CURRENT_KEY.reset(token_ctx)

    return middleware


def _key_guard(scope: Scope) -> None:
    key = _CURRENT_KEY.get()
    if key is None or not key.allows(scope):
        raise ScopeDenied(f"this API key may not act on {scope.path}")


async def serve_mcp(settings: Settings, profile: Profile, transport: str, host: str, port: int) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the stdio protocol channel
    async with embedded_app(settings, background=True) as (runtime, memory):
        kwargs: dict[str, Any] = {"stats": _stats_for(settings), "replay": _replay_for(runtime)}
        if transport == "stdio":
            await build_server(memory, profile, **kwargs).run_stdio_async()
            return
        import uvicorn

        keys = keystore(settings)
        server = build_server(memory, profile, guard=_key_guard, **kwargs)
        app = _key_middleware(server.streamable_http_app(host=host), keys)
        await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()
