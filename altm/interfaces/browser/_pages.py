"""The pages people read: the scopes a key covers, a scope's memories (by layer and kind, or a search), one
memory (content, verdict, lifecycle, evidence chain to L0, drawn neighbourhood, audit history), the review
queue, governance decisions with a preview, and the confirmation before an erasure."""

from __future__ import annotations

import contextlib
import re
from importlib import resources
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import RedirectResponse, Response

from altm.app import NotFound
from altm.core import Kind, Layer, Scope
from altm.interfaces.browser._auth import Browsing, memory_of
from altm.interfaces.browser._graph import layout
from altm.interfaces.browser._render import SECURITY_HEADERS, page

_ID = re.compile(r"[A-Za-z0-9_.:@+-]{1,160}")  # whole string (fullmatch): no trailing newline
PAGE_SIZE = 50
LAYERS = [layer.value for layer in Layer]
KINDS = [kind.value for kind in Kind]

ScopeText = Annotated[str, Query(max_length=600)]

pages = APIRouter(prefix="/ui", include_in_schema=False)


def scope_of(text: str) -> Scope:
    try:
        return Scope.parse(text)
    except ValueError as exc:
        raise HTTPException(422, detail=str(exc)) from None


def checked_id(value: str, what: str) -> str:
    if not _ID.fullmatch(value):
        raise NotFound(f"no {what} {value[:40]!r}")
    return value


@pages.get("")
@pages.get("/")
async def home() -> Response:
    return RedirectResponse("/ui/scopes", status_code=303, headers=SECURITY_HEADERS)


@pages.get("/static/altm.css")
async def stylesheet() -> Response:
    css = resources.files("altm.interfaces.browser").joinpath("static/altm.css").read_bytes()
    return Response(css, media_type="text/css", headers={**SECURITY_HEADERS, "Cache-Control": "max-age=3600"})


@pages.get("/scopes")
async def scopes(request: Request, gate: Browsing) -> Response:
    assert gate.key is not None
    memory = memory_of(request)
    found = await memory.read(memory.recall.scopes_under, gate.key.prefix)
    return page(request, "scopes.html", scopes=found)


@pages.get("/memories")
async def memories(request: Request, gate: Browsing, scope: ScopeText,
                   layer: Annotated[str, Query(pattern="^(L[0-4])?$")] = "",
                   kind: Annotated[str, Query(max_length=40)] = "", q: Annotated[str, Query(max_length=2000)] = "",
                   offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0) -> Response:
    parsed = gate.recall(scope_of(scope))
    memory = memory_of(request)
    if kind and kind not in KINDS:
        raise HTTPException(422, detail=f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    if q.strip():
        hits = (await memory.read(memory.search, parsed, None, q, top_k=PAGE_SIZE)).hits
        rows = [h.model_dump() for h in hits if (not layer or h.layer == layer) and (not kind or h.kind == kind)]
    else:
        rows = await memory.read(memory.list_memories, parsed, layer=layer or None, kind=kind or None,
                                 limit=PAGE_SIZE + 1, offset=offset)
    more = len(rows) > PAGE_SIZE and not q.strip()
    return page(request, "memories.html", scope=parsed.path, rows=rows[:PAGE_SIZE], layer=layer, kind=kind, q=q,
                offset=offset, more=more, page_size=PAGE_SIZE, layers=LAYERS, kinds=KINDS)


@pages.get("/memory/{memory_id}")
async def memory_page(request: Request, gate: Browsing, memory_id: str, scope: ScopeText) -> Response:
    parsed = gate.recall(scope_of(scope))
    memory = memory_of(request)
    found = await memory.read(memory.recall.inspect, parsed, checked_id(memory_id, "memory"))
    return page(request, "memory.html", scope=parsed.path, m=found.row, attributes=orjson.dumps(
        found.attributes, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode(), chain=found.chain,
        derived=found.derived, drawing=layout(found.points, found.lines), audit=found.audit,
        older_audit=found.older_audit)


@pages.get("/review")
async def review(request: Request, gate: Browsing, scope: ScopeText) -> Response:
    parsed = gate.user(scope_of(scope), "the review queue")
    memory = memory_of(request)
    queue = await memory.read(memory.review_queue, parsed, limit=100)
    return page(request, "review.html", scope=parsed.path, home=parsed.home, queue=queue)


@pages.get("/governance")
async def governance(request: Request, gate: Browsing, scope: ScopeText) -> Response:
    parsed = gate.user(scope_of(scope), "the governance log")
    decisions: dict[str, dict[str, Any]] = {}
    memory = memory_of(request)
    for event in await memory.read(memory.governance_events, parsed, limit=500):
        entry = decisions.setdefault(str(event["decision_id"]), {**event, "steps": 0})
        entry["steps"] += 1
    return page(request, "governance.html", scope=parsed.path, decisions=list(decisions.values()))


@pages.get("/governance/{decision_id}")
async def decision(request: Request, gate: Browsing, decision_id: str, scope: ScopeText) -> Response:
    parsed = gate.user(scope_of(scope), "the governance log")
    memory = memory_of(request)
    steps = await memory.read(memory.recall.governance_decision, parsed,
                              checked_id(decision_id, "governance decision"))
    for step in steps:
        with contextlib.suppress(orjson.JSONDecodeError):  # not JSON: shown as stored
            step["inputs"] = orjson.dumps(orjson.loads(step["inputs"]), option=orjson.OPT_INDENT_2).decode()
    return page(request, "decision.html", scope=parsed.path, decision_id=decision_id, steps=steps)


@pages.get("/erase")
async def erase_confirm(request: Request, gate: Browsing, scope: ScopeText,
                        target: Annotated[str, Query(pattern="^(memory|session|user)$")],
                        memory_id: Annotated[str, Query(max_length=160)] = "",
                        session_id: Annotated[str, Query(max_length=128)] = "") -> Response:
    parsed = scope_of(scope)
    memory = memory_of(request)
    subject: dict[str, Any] = {"target": target}
    named_memory = checked_id(memory_id, "memory") if target == "memory" else None
    named_session = checked_id(session_id, "session") if target == "session" else None
    gate.erase(parsed, target, named_memory, named_session)
    if named_memory is not None:
        subject["memory"] = await memory.read(memory.recall.memory, parsed, named_memory)
    subject["session_id"] = named_session
    reach = await memory.read(memory.recall.erasure_reach, parsed, target, memory_id=named_memory,
                              session_id=named_session)
    subject["count"] = len(reach)
    subject["shared"] = [r for r in reach if r["layer"] == "L4" or r["agent_id"] != parsed.agent_id]
    return page(request, "erase.html", scope=parsed.path, subject=subject, memory_id=memory_id,
                session_id=session_id, error=None)
