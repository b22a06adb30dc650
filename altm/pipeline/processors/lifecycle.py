"""lifecycle: use signals on the control topic → idempotent signal proposals (the writer recomputes counters,
weight and state from every signal it has, see :mod:`altm.pipeline.lifecycle_rules`).

Signals: ``injected`` (a memory entered a bundle), ``cited_by_agent`` (listed in commit_turn), ``helpful`` /
``harmful`` feedback (in commit_turn or a separate feedback call), ``pin`` / ``unpin``.
"""

from __future__ import annotations

from collections.abc import Sequence

from altm.core import (
    ControlAction,
    ControlEvent,
    Event,
    Forget,
    ForgetProposal,
    LifecycleSignal,
    Proposal,
    SignalProposal,
)
from altm.core.errors import ProcessingError
from altm.core.topics import Topic
from altm.pipeline.processors._base import Processor, ProcessorContext, proposal

_DIRECT = {"injected", "cited_by_agent", "helpful", "harmful"}


def signals_of(event: ControlEvent) -> list[tuple[str, str]]:
    """(memory id, kind) pairs a control event carries."""
    if event.action is ControlAction.PIN:
        return [(m, "pin") for m in event.target_ids]
    if event.action is ControlAction.UNPIN:
        return [(m, "unpin") for m in event.target_ids]
    if event.action is not ControlAction.FEEDBACK:
        return []
    kind = str(event.payload.get("signal", ""))
    if kind in _DIRECT:
        return [(m, kind) for m in event.target_ids]
    if kind == "feedback":
        helpful = [str(m) for m in event.payload.get("helpful", [])]
        harmful = [str(m) for m in event.payload.get("harmful", [])]
        return [(m, "helpful") for m in helpful] + [(m, "harmful") for m in harmful]
    raise ProcessingError(f"unknown feedback signal {kind!r}")


def lifecycle_proposals(event: ControlEvent, processor: str = "lifecycle") -> list[Proposal]:
    """The writer proposals a control event's signals or lifecycle pass ask for (none for other requests).
    Pure; raises :class:`ProcessingError` (or ``ValueError`` for a payload of the wrong shape) for a request
    the stage cannot apply, so input can be refused before it is published."""
    if event.action is ControlAction.LIFECYCLE:
        return _pass(event, processor)
    return [
        proposal(SignalProposal, scope=event.scope, processor=processor, cause=event,
                 signal=LifecycleSignal(memory_id=mid, signal_id=event.event_id, kind=kind,
                                        at=event.timestamp, session_id=event.session_id))
        for mid, kind in signals_of(event)
    ]


def _pass(event: ControlEvent, processor: str) -> list[Proposal]:
    """A retention or compaction decision (made at ``event.timestamp``) → proposals for the writer."""
    op = event.payload.get("op")
    if op == "forget":
        forget = Forget(memory_ids=tuple(str(m) for m in event.payload.get("memory_ids", [])),
                        reason=str(event.payload.get("reason", "past retention")),
                        tombstone=bool(event.payload.get("tombstone", False)),
                        cutoffs=dict(event.payload.get("cutoffs") or {}))
        return [proposal(ForgetProposal, scope=event.scope, processor=processor, cause=event, forget=forget)]
    if op == "compress":
        levels = {str(k): int(v) for k, v in dict(event.payload.get("levels", {})).items()}
        return [
            proposal(SignalProposal, scope=event.scope, processor=processor, cause=event,
                     signal=LifecycleSignal(memory_id=mid, signal_id=event.event_id, kind="compress",
                                            level=level, at=event.timestamp))
            for mid, level in sorted(levels.items())
        ]
    raise ProcessingError(f"unknown lifecycle pass {op!r}; expected forget or compress")


class LifecycleProcessor(Processor):
    name = "lifecycle"
    input_topic = Topic.CONTROL

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        if not isinstance(event, ControlEvent):
            raise ProcessingError(f"the control topic carries control events, got {event.event_type!r}")
        return lifecycle_proposals(event, self.name)
