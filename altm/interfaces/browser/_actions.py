"""What people change from the browser, each a form post with the login's CSRF token, checked by the same
:class:`Gate` as the API, and each published on the control topic like the API's calls: approve or reject a
review item, roll back a governance decision, pin or unpin a memory, erase a memory, a session or a user."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response

from altm.interfaces.browser._auth import Browsing, Posted, memory_of
from altm.interfaces.browser._pages import checked_id, scope_of
from altm.interfaces.browser._render import page

actions = APIRouter(prefix="/ui", include_in_schema=False)
_NOTE_CHARS = 2000


def _queued(request: Request, what: str, event_id: str, back: str) -> Response:
    return page(request, "queued.html", status=202, what=what, event_id=event_id, back=back)


@actions.post("/review")
async def review_decide(request: Request, gate: Browsing, form: Posted) -> Response:
    scope = gate.user(scope_of(form.get("scope", "")), "a review decision")
    decision = form.get("decision", "")
    if decision not in ("approve", "reject"):
        raise ValueError(f"a review decision is approve or reject, not {decision[:20]!r}")
    item_id = checked_id(form.get("item_id", ""), "review item")
    event_id = await memory_of(request).review_decide(scope, item_id, decision,
                                                      form.get("note", "")[:_NOTE_CHARS] or None)
    return _queued(request, f"{decision} {item_id}", event_id, f"/ui/review?scope={quote(scope.path)}")


@actions.post("/rollback")
async def rollback(request: Request, gate: Browsing, form: Posted) -> Response:
    scope = gate.user(scope_of(form.get("scope", "")), "a rollback")
    decision_id = checked_id(form.get("decision_id", ""), "governance decision")
    memory_of(request).recall.governance_decision(scope, decision_id)  # unknown or foreign: not found
    if form.get("confirm") != "yes":
        raise ValueError("tick the confirmation box to roll the decision back")
    event_id = await memory_of(request).rollback(scope, decision_id,
                                                 form.get("reason", "")[:_NOTE_CHARS] or "rolled back in the browser")
    return _queued(request, f"rollback of {decision_id}", event_id, f"/ui/governance?scope={quote(scope.path)}")


@actions.post("/pin")
async def pin(request: Request, gate: Browsing, form: Posted) -> Response:
    scope = scope_of(form.get("scope", ""))
    memory_id = checked_id(form.get("memory_id", ""), "memory")
    signal = "unpin" if form.get("signal") == "unpin" else "pin"
    gate.curate(scope, [memory_id], f"{signal}ning it")
    event_id = await memory_of(request).feedback(scope, [memory_id], signal, "from the memory browser")
    return _queued(request, f"{signal} {memory_id}", event_id, f"/ui/memory/{memory_id}?scope={quote(scope.path)}")


@actions.post("/erase")
async def erase(request: Request, gate: Browsing, form: Posted) -> Response:
    scope = scope_of(form.get("scope", ""))
    target = form.get("target", "")
    if target not in ("memory", "session", "user"):
        raise ValueError(f"erase a memory, a session or a user, not {target[:20]!r}")
    memory_id = checked_id(form.get("memory_id", ""), "memory") if target == "memory" else None
    session_id = checked_id(form.get("session_id", ""), "session") if target == "session" else None
    gate.erase(scope, target, memory_id, session_id)
    if form.get("confirm") != "yes":
        raise ValueError("tick the confirmation box to erase")
    event_id = await memory_of(request).erase(scope, target, memory_id=memory_id, session_id=session_id,
                                              reason=form.get("reason", "")[:_NOTE_CHARS] or "erased in the browser")
    return _queued(request, f"erasure of the {target}", event_id, f"/ui/memories?scope={quote(scope.path)}")
