"""The HTTP API (FastAPI). Binds to 127.0.0.1 by default; every route but /healthz needs an API key whose
scope prefix covers the scope of the request (a key for tenant A can never read tenant B)."""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator

from altm.app import Feedback, MemoryApp, ProtocolError, unknown_cycle
from altm.core import Scope
from altm.interfaces.http._keys import ApiKey, KeyStore
from altm.recall.retrieval import DEFAULT_PRESET, PRESETS

StatsProvider = Callable[[], Awaitable[dict[str, Any]]]


class _Scoped(BaseModel):
    scope: str = Field(description="TENANT/WORKSPACE/USER/AGENT", examples=["acme/platform/dana/coder"])

    @field_validator("scope")
    @classmethod
    def _valid_scope(cls, value: str) -> str:
        Scope.parse(value)  # raises ValueError with the reason → 422
        return value

    @property
    def parsed(self) -> Scope:
        return Scope.parse(self.scope)


class PrepareRequest(_Scoped):
    session_id: str = Field(min_length=1, max_length=128)
    turn_id: str = Field(min_length=1, max_length=256)
    content: str = Field(min_length=1)
    token_budget: int = Field(default=2000, ge=64, le=200_000)
    strict_session: bool = False
    preset: str = DEFAULT_PRESET
    idempotency_key: str | None = Field(default=None, max_length=256)

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        if value not in PRESETS:
            raise ValueError(f"unknown preset {value!r}; choose one of {sorted(PRESETS)}")
        return value


class CommitRequest(BaseModel):
    cycle_id: str
    assistant_content: str
    cited_memory_ids: list[str] = Field(default_factory=list)
    feedback: Feedback | None = None


class AbortRequest(BaseModel):
    cycle_id: str
    reason: str = Field(min_length=1, max_length=2000)


class DrilldownRequest(_Scoped):
    marker: str
    query: str | None = None


class FeedbackRequest(_Scoped):
    memory_ids: list[str] = Field(min_length=1)
    signal: str = Field(pattern="^(helpful|harmful|pin|unpin)$")
    note: str | None = None


class EraseRequest(_Scoped):
    target: str = Field(pattern="^(memory|session|agent|user)$")
    memory_id: str | None = None
    session_id: str | None = None
    reason: str = Field(default="erasure requested", max_length=2000)


class ReviewRequest(_Scoped):
    item_id: str
    decision: str = Field(pattern="^(approve|reject)$")
    note: str | None = Field(default=None, max_length=2000)


class QueryRequest(_Scoped):
    session_id: str | None = None
    query: str = Field(min_length=1)
    preset: str = DEFAULT_PRESET
    top_k: int = Field(default=10, ge=1, le=200)
    strict_session: bool = False


def create_app(memory: MemoryApp, keys: KeyStore, stats: StatsProvider | None = None) -> FastAPI:
    api = FastAPI(title="ALTM", version="0.1.0",
                  description="Long-term memory for LLM agents: prepare/commit turns, recall, drilldown.")

    @api.exception_handler(ProtocolError)
    async def _protocol_error(request: Request, exc: ProtocolError) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content={"error": exc.code, "message": str(exc)})

    @api.exception_handler(ValueError)
    async def _value_error(request: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"error": "invalid_request", "message": str(exc)})

    def caller(authorization: Annotated[str | None, Header()] = None,
               x_api_key: Annotated[str | None, Header()] = None) -> ApiKey:
        token = x_api_key or (authorization.removeprefix("Bearer ").strip() if authorization else None)
        if not token:
            raise HTTPException(401, detail="missing API key (Authorization: Bearer <key> or X-API-Key)",
                                headers={"WWW-Authenticate": "Bearer"})
        key = keys.lookup(token)
        if key is None:
            raise HTTPException(401, detail="unknown API key", headers={"WWW-Authenticate": "Bearer"})
        return key

    Caller = Annotated[ApiKey, Depends(caller)]

    def allow(key: ApiKey, scope: Scope) -> None:
        if not key.allows(scope):
            raise HTTPException(403, detail=f"key {key.name!r} is limited to {key.scope_prefix!r}, not {scope.path}")

    def allow_cycle(key: ApiKey, cycle_id: str) -> None:
        """A cycle outside the key's prefix answers like an unknown one (cycle ids are deterministic)."""
        if not key.allows(memory.find_cycle(cycle_id).scope):
            raise unknown_cycle(cycle_id)

    @api.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @api.post("/v1/prepare")
    async def prepare(req: PrepareRequest, key: Caller) -> dict[str, Any]:
        allow(key, req.parsed)
        prepared = await memory.prepare_turn(
            req.parsed, req.session_id, req.turn_id, req.content, req.token_budget,
            strict_session=req.strict_session, preset_name=req.preset, idempotency_key=req.idempotency_key)
        return prepared.model_dump()

    @api.post("/v1/commit")
    async def commit(req: CommitRequest, key: Caller) -> dict[str, Any]:
        allow_cycle(key, req.cycle_id)
        done = await memory.commit_turn(req.cycle_id, req.assistant_content, req.cited_memory_ids, req.feedback)
        return done.model_dump()

    @api.post("/v1/abort")
    async def abort(req: AbortRequest, key: Caller) -> dict[str, Any]:
        allow_cycle(key, req.cycle_id)
        return (await memory.abort_turn(req.cycle_id, req.reason)).model_dump(mode="json")

    @api.post("/v1/drilldown")
    async def drilldown(req: DrilldownRequest, key: Caller) -> dict[str, Any]:
        allow(key, req.parsed)
        return memory.drilldown(req.marker, req.parsed, req.query).model_dump()

    @api.post("/v1/feedback")
    async def feedback(req: FeedbackRequest, key: Caller) -> dict[str, Any]:
        allow(key, req.parsed)
        event_id = await memory.feedback(req.parsed, req.memory_ids, req.signal, req.note)
        return {"accepted": True, "event_id": event_id,
                "note": "queued on the control topic; applied by the lifecycle processor"}

    @api.post("/v1/erase")
    async def erase(req: EraseRequest, key: Caller) -> dict[str, Any]:
        allow(key, req.parsed)
        event_id = await memory.erase(req.parsed, req.target, memory_id=req.memory_id, session_id=req.session_id,
                                      reason=req.reason)
        return {"accepted": True, "event_id": event_id,
                "note": "queued on the control topic; the writer removes the content and leaves tombstones"}

    @api.get("/v1/review")
    async def review_list(key: Caller, scope: Annotated[str, Query(description="TENANT/WORKSPACE/USER/AGENT")],
                          limit: Annotated[int, Query(ge=1, le=500)] = 50) -> dict[str, Any]:
        try:
            parsed = Scope.parse(scope)
        except ValueError as exc:
            raise HTTPException(422, detail=str(exc)) from None
        allow(key, parsed)
        return memory.review_queue(parsed, limit=limit)

    @api.post("/v1/review")
    async def review_decide(req: ReviewRequest, key: Caller) -> dict[str, Any]:
        allow(key, req.parsed)
        event_id = await memory.review_decide(req.parsed, req.item_id, req.decision, req.note)
        return {"accepted": True, "event_id": event_id, "note": "queued on the control topic; the writer applies it"}

    @api.post("/v1/query")
    async def query(req: QueryRequest, key: Caller) -> dict[str, Any]:
        allow(key, req.parsed)
        result = memory.search(req.parsed, req.session_id, req.query, preset_name=req.preset, top_k=req.top_k,
                               strict_session=req.strict_session)
        return {"results": [h.model_dump() for h in result.hits], "timings_ms": result.timings_ms}

    @api.get("/v1/memories")
    async def memories(
        key: Caller,
        scope: Annotated[str, Query(description="TENANT/WORKSPACE/USER/AGENT")],
        session_id: str | None = None,
        layer: Annotated[str | None, Query(pattern="^L[0-4]$")] = None,
        kind: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> dict[str, Any]:
        try:
            parsed = Scope.parse(scope)
        except ValueError as exc:
            raise HTTPException(422, detail=str(exc)) from None
        allow(key, parsed)
        rows = memory.list_memories(parsed, session_id=session_id, layer=layer, kind=kind, limit=limit,
                                    offset=offset)
        return {"memories": rows, "count": len(rows)}

    @api.get("/v1/stats")
    async def stats_route(key: Caller) -> dict[str, Any]:
        if not key.admin:
            raise HTTPException(403, detail="stats cover every scope: an admin key is needed")
        if stats is None:
            raise HTTPException(404, detail="stats are not available in this deployment")
        return await stats()

    return api
