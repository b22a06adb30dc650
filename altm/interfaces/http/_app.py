"""The HTTP API (FastAPI). Binds to 127.0.0.1 by default; every route but /healthz needs an API key whose
scope prefix covers the scope of the request (a key for tenant A can never read tenant B). Routes are
grouped by concern (runtime protocol, recall, administration); the app holds the memory and the keys."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from altm.app import MemoryApp, ProtocolError
from altm.core import Scope
from altm.interfaces.access import ApiKey, Gate, KeyStore
from altm.interfaces.browser import error_page, install_browser, is_browser
from altm.interfaces.http._limits import DEFAULT_MAX_BODY_BYTES, BodyLimit
from altm.interfaces.http._requests import (
    AbortRequest,
    CommitRequest,
    DrilldownRequest,
    EraseRequest,
    FeedbackRequest,
    PrepareRequest,
    QueryRequest,
    ReviewRequest,
)

StatsProvider = Callable[[], Awaitable[dict[str, Any]]]


def _memory(request: Request) -> MemoryApp:
    memory: MemoryApp = request.app.state.memory
    return memory


def _caller(request: Request, authorization: Annotated[str | None, Header()] = None,
            x_api_key: Annotated[str | None, Header()] = None) -> ApiKey:
    token = x_api_key or (authorization.removeprefix("Bearer ").strip() if authorization else None)
    if not token:
        raise HTTPException(401, detail="missing API key (Authorization: Bearer <key> or X-API-Key)",
                            headers={"WWW-Authenticate": "Bearer"})
    keys: KeyStore = request.app.state.keys
    key = keys.lookup(token)
    if key is None:
        raise HTTPException(401, detail="unknown API key", headers={"WWW-Authenticate": "Bearer"})
    return key


def _gate(request: Request, key: Annotated[ApiKey, Depends(_caller)]) -> Gate:
    return Gate(_memory(request), key)


Memory = Annotated[MemoryApp, Depends(_memory)]
Caller = Annotated[Gate, Depends(_gate)]
ScopeQuery = Annotated[str, Query(description="TENANT/WORKSPACE/USER/AGENT")]


def _parsed(text: str) -> Scope:
    try:
        return Scope.parse(text)
    except ValueError as exc:
        raise HTTPException(422, detail=str(exc)) from None


def _queued(event_id: str, note: str) -> dict[str, Any]:
    return {"accepted": True, "event_id": event_id, "note": note}


protocol = APIRouter(tags=["runtime protocol"])
recall = APIRouter(tags=["recall"])
admin = APIRouter(tags=["administration"])


@protocol.post("/v1/prepare")
async def prepare(req: PrepareRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    gate.recall(req.parsed)
    prepared = await memory.prepare_turn(
        req.parsed, req.session_id, req.turn_id, req.content, req.token_budget,
        strict_session=req.strict_session, preset_name=req.preset, idempotency_key=req.idempotency_key)
    return prepared.model_dump()


@protocol.post("/v1/commit")
async def commit(req: CommitRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    gate.cycle(req.cycle_id)
    done = await memory.commit_turn(req.cycle_id, req.assistant_content, req.cited_memory_ids, req.feedback)
    return done.model_dump()


@protocol.post("/v1/abort")
async def abort(req: AbortRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    gate.cycle(req.cycle_id)
    return (await memory.abort_turn(req.cycle_id, req.reason)).model_dump(mode="json")


@protocol.post("/v1/drilldown")
async def drilldown(req: DrilldownRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    gate.recall(req.parsed)
    return (await memory.read(memory.drilldown, req.marker, req.parsed, req.query)).model_dump()


@recall.post("/v1/query")
async def query(req: QueryRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    gate.recall(req.parsed)
    result = await memory.read(memory.search, req.parsed, req.session_id, req.query, preset_name=req.preset,
                               top_k=req.top_k, strict_session=req.strict_session)
    return {"results": [h.model_dump() for h in result.hits], "timings_ms": result.timings_ms}


@recall.get("/v1/memories")
async def memories(
    gate: Caller, memory: Memory, scope: ScopeQuery, session_id: str | None = None,
    layer: Annotated[str | None, Query(pattern="^L[0-4]$")] = None, kind: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50, offset: Annotated[int, Query(ge=0, le=2**53 - 1)] = 0,
) -> dict[str, Any]:
    rows = await memory.read(memory.list_memories, gate.recall(_parsed(scope)), session_id=session_id, layer=layer,
                             kind=kind, limit=limit, offset=offset)
    return {"memories": rows, "count": len(rows)}


@admin.post("/v1/feedback")
async def feedback(req: FeedbackRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    if req.signal in ("pin", "unpin"):
        gate.curate(req.parsed, req.memory_ids, f"{req.signal}ning it")
    else:
        gate.recall(req.parsed)
    event_id = await memory.feedback(req.parsed, req.memory_ids, req.signal, req.note)
    return _queued(event_id, "queued on the control topic; applied by the lifecycle processor")


@admin.post("/v1/erase")
async def erase(req: EraseRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    gate.erase(req.parsed, req.target, req.memory_id, req.session_id)
    event_id = await memory.erase(req.parsed, req.target, memory_id=req.memory_id, session_id=req.session_id,
                                  reason=req.reason)
    return _queued(event_id, "queued on the control topic; the writer removes the content and leaves tombstones")


@admin.get("/v1/review")
async def review_list(gate: Caller, memory: Memory, scope: ScopeQuery,
                      limit: Annotated[int, Query(ge=1, le=500)] = 50) -> dict[str, Any]:
    return await memory.read(memory.review_queue, gate.user(_parsed(scope), "the review queue"), limit=limit)


@admin.post("/v1/review")
async def review_decide(req: ReviewRequest, gate: Caller, memory: Memory) -> dict[str, Any]:
    gate.user(req.parsed, "a review decision")
    event_id = await memory.review_decide(req.parsed, req.item_id, req.decision, req.note)
    return _queued(event_id, "queued on the control topic; the writer applies it")


@admin.get("/v1/stats")
async def stats_route(gate: Caller, request: Request) -> dict[str, Any]:
    gate.operate("stats")
    stats: StatsProvider | None = request.app.state.stats
    if stats is None:
        raise HTTPException(404, detail="stats are not available in this deployment")
    return await stats()


async def _protocol_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProtocolError)
    if is_browser(request):
        return error_page(request, exc.status, str(exc))
    return JSONResponse(status_code=exc.status, content={"error": exc.code, "message": str(exc)})


async def _value_error(request: Request, exc: Exception) -> Response:
    if is_browser(request):
        return error_page(request, 422, str(exc))
    return JSONResponse(status_code=422, content={"error": "invalid_request", "message": str(exc)})


async def _http_error(request: Request, exc: Exception) -> Response:
    """The browser's errors as pages (a redirect to the login stays a redirect); the API's as JSON."""
    assert isinstance(exc, StarletteHTTPException)
    if is_browser(request) and exc.status_code >= 400:
        return error_page(request, exc.status_code, str(exc.detail))
    return await http_exception_handler(request, exc)


async def _invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if is_browser(request):
        return error_page(request, 422, "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    return await request_validation_exception_handler(request, exc)


def create_app(memory: MemoryApp, keys: KeyStore, stats: StatsProvider | None = None, *,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    # no /docs or /redoc: FastAPI's pages load their scripts from a CDN, on the browser's origin (no CDN
    # links: every asset ships in the package); /openapi.json stays for clients and their own tools
    api = FastAPI(title="ALTM", version="0.1.0", docs_url=None, redoc_url=None,
                  description="Long-term memory for LLM agents: prepare/commit turns, recall, drilldown.")
    api.state.memory, api.state.keys, api.state.stats = memory, keys, stats
    api.add_exception_handler(ProtocolError, _protocol_error)
    api.add_exception_handler(ValueError, _value_error)
    api.add_exception_handler(StarletteHTTPException, _http_error)
    api.add_exception_handler(RequestValidationError, _invalid_request)
    api.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @api.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        """Prometheus exposition of this process's metrics. No key: the labels are bounded names (stages, ops,
        steps), never a user, scope or memory id, and the service binds to loopback unless told otherwise."""
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    for router in (protocol, recall, admin):
        api.include_router(router)
    install_browser(api, keys)
    return api
