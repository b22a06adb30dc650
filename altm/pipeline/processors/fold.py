"""fold: L0 changes → one incremental L1 capsule per session (extractive, or summarised by a model)."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence

from pydantic import BaseModel, Field

from altm.core import (
    ChangeEvent,
    ChangeMarker,
    ChangeStatus,
    Event,
    Kind,
    Layer,
    MemoryUnit,
    Method,
    Proposal,
    ProposalOp,
    capsule,
)
from altm.core.topics import Topic
from altm.models import ChatModel, ModelTask
from altm.pipeline.processors import _rules as rules
from altm.pipeline.processors._base import (
    BatchFailure,
    Processor,
    ProcessorContext,
    committed_memory,
    committed_upsert,
    derived_memory,
    upsert_proposal,
)
from altm.store import SessionLine

_CONSTRAINT = re.compile(
    r"\b(?:must|must not|mustn't|should not|shouldn't|never|always|cannot|can't|has to|have to|need to|"
    r"needs to|required?|deadline|no later than|at most|at least|under \d+|limit)\b",
    re.IGNORECASE,
)
_SECTION_LIMIT = 8

_FROM = frozenset({Layer.L0})


class CapsuleSummary(BaseModel):
    """What a model returns for a session capsule."""

    summary: str = Field(min_length=1, max_length=4000)
    decisions: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    corrections: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)


_MODEL_ITEM_CHARS = 500


def _bounded(items: list[str]) -> list[str]:
    """A model's section as the extractive one is bounded: its first ``_SECTION_LIMIT`` items, each cut at
    ``_MODEL_ITEM_CHARS`` (a model's thousands of items made a capsule over the content limit, refused, and the
    session had none)."""
    return [i if len(i) <= _MODEL_ITEM_CHARS else i[: _MODEL_ITEM_CHARS - 1] + "…" for i in items[:_SECTION_LIMIT]]


def capsule_id_parts(mem: MemoryUnit) -> list[str]:
    return [mem.scope.path, mem.session_id or "", "L1", "capsule"]


_SECTIONS = ("decisions", "constraints", "corrections", "open_questions", "numbers", "paths")
SILENT_KEPT = 200_000
"""L0 messages a fold processor remembers as silent (see :class:`SilentMessages`)."""
SECTIONS_KEPT = 20_000
"""Messages whose sections a fold processor remembers (see :class:`MessageSections`)."""


def _digest(key: bytes, msg: MemoryUnit | SessionLine) -> bytes:
    """How a fold processor knows a message: a digest of its id and content hash, keyed by this process's random
    ``key`` (content is never kept for it)."""
    return hashlib.blake2b(f"{msg.memory_id}\0{msg.content_hash}".encode(), key=key, digest_size=16).digest()


class SilentMessages:
    """L0 messages that give a capsule nothing (no decision, constraint, correction, question, number, date or
    path): a session is folded again after each batch of its messages, and a long session's every message was
    classified again each time (a 2,000-turn session: 88,822 sentences classified). A message is known by its
    id and content hash, so one re-sent under the same id with other content (after a forget) is read again.
    Only a keyed digest of the two is kept (the key is this process's, random), never content: an erased
    message leaves nothing readable here. The oldest are let go past ``limit``."""

    def __init__(self, limit: int = SILENT_KEPT) -> None:
        self.limit = limit
        self._key = secrets.token_bytes(16)
        self._known: dict[bytes, None] = {}

    def __contains__(self, msg: object) -> bool:
        return isinstance(msg, MemoryUnit | SessionLine) and _digest(self._key, msg) in self._known

    def __len__(self) -> int:
        return len(self._known)

    def add(self, msg: MemoryUnit) -> None:
        self._known[_digest(self._key, msg)] = None
        if len(self._known) > self.limit:
            del self._known[next(iter(self._known))]


class MessageSections:
    """What each message gives its capsule (``_sections_of``), remembered by a keyed digest of its id and content
    hash: a long session is folded again after each batch of its messages, and each fold classified every message
    that gives the capsule something again (a 400-turn session: 80,200 classifications). Unlike
    :class:`SilentMessages` this holds the messages' sentences: ``clear`` lets them all go when an erasure, a
    forget or a rollback folds a session again, so an erased message leaves nothing here once its erasure
    reached fold. The oldest are let go past ``limit``."""

    def __init__(self, limit: int = SECTIONS_KEPT) -> None:
        self.limit = limit
        self._key = secrets.token_bytes(16)
        self._known: dict[bytes, dict[str, list[str]]] = {}

    def __len__(self) -> int:
        return len(self._known)

    def of(self, msg: MemoryUnit) -> dict[str, list[str]]:
        digest = _digest(self._key, msg)
        sections = self._known.get(digest)
        if sections is None:
            sections = self._known[digest] = _sections_of(msg)
            if len(self._known) > self.limit:
                del self._known[next(iter(self._known))]
        return sections

    def clear(self) -> None:
        self._known.clear()


def _sections_of(msg: MemoryUnit) -> dict[str, list[str]]:
    """What one message gives each section of its session's capsule."""
    sections: dict[str, list[str]] = {key: [] for key in _SECTIONS}
    for sentence in rules.sentences(msg.content):
        match = rules.classify(sentence)
        # what another speaker said is labelled: a tool's "correction" is not the user's
        said = sentence if msg.role in (None, "user") else f"({msg.role}) {sentence}"
        if sentence.endswith("?") and msg.role == "user":
            sections["open_questions"].append(sentence)
        elif rules.CORRECTION_CUES.search(sentence):
            sections["corrections"].append(said)
        elif match is not None and match.kind is Kind.DECISION:
            sections["decisions"].append(said)
        elif _CONSTRAINT.search(sentence) and msg.role == "user":
            sections["constraints"].append(sentence)
    sections["numbers"] += rules.numbers(msg.content) + rules.dates(msg.content)
    sections["paths"] += rules.paths(msg.content)
    return sections


def extractive_sections(messages: Sequence[MemoryUnit], silent: SilentMessages | None = None,
                        known: MessageSections | None = None) -> dict[str, list[str]]:
    """The capsule's sections, from its messages in order; ``silent`` skips the messages known to give none
    (and learns the new ones); ``known`` remembers what the others give."""
    return capsule_sections(messages, silent, known)[0]


def capsule_sections(messages: Sequence[MemoryUnit], silent: SilentMessages | None = None,
                     known: MessageSections | None = None) -> tuple[dict[str, list[str]], list[str]]:
    """:func:`extractive_sections`, and the ids of the messages the items kept come from, in message order."""
    sections: dict[str, list[tuple[str, str]]] = {key: [] for key in _SECTIONS}
    for msg in messages:
        if silent is not None and msg in silent:
            continue
        said = known.of(msg) if known is not None else _sections_of(msg)
        if not any(said.values()):
            if silent is not None and msg.layer is Layer.L0:
                silent.add(msg)
            continue
        for key, items in said.items():
            sections[key] += [(item, msg.memory_id) for item in items]
    kept = {k: _first_unique(v) for k, v in sections.items()}
    sources = {mid for items in kept.values() for _, mid in items}
    return ({k: [item for item, _ in v] for k, v in kept.items()},
            [m.memory_id for m in messages if m.memory_id in sources])


def _first_unique(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The first of each item (case aside), with the id of the message it comes from; at most
    ``_SECTION_LIMIT`` (three times as many short ones: numbers, dates, paths)."""
    seen: dict[str, tuple[str, str]] = {}
    for item in items:
        seen.setdefault(item[0].casefold(), item)
    return list(seen.values())[: _SECTION_LIMIT * (3 if len(items) and len(items[0][0]) < 25 else 1)]


def render_capsule(session_id: str, count: int, first: MemoryUnit, sections: dict[str, list[str]],
                   summary: str | None = None) -> str:
    """The capsule's text: ``count`` messages, the first of them ``first`` (see :mod:`altm.core.capsule`)."""
    date = first.valid_from.date().isoformat() if first.valid_from else "unknown date"
    return capsule.render(f"Session {session_id} ({count} messages, {date})", sections, summary)


def flat_sections(sections: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each item on one line and free of the item separator: one statement of the capsule's text each."""
    return {key: [capsule.flat(item) for item in items] for key, items in sections.items()}


_FOLDED_AGAIN = frozenset({ProposalOp.ERASE, ProposalOp.FORGET, ProposalOp.ROLLBACK})
"""Changes that name a message whose session is folded again: what an erasure or a forget left, what a rollback
(of a forget) put back."""


def _session_message(event: Event) -> MemoryUnit | None:
    """The message whose session is folded: a committed one, or one an erasure or a forget names (it took a
    message the capsule quoted, and the session is folded again from the messages left)."""
    if isinstance(event, ChangeEvent) and event.status is ChangeStatus.COMMITTED and event.op in _FOLDED_AGAIN:
        return event.memory if event.memory is not None and event.memory.layer is Layer.L0 else None
    return committed_memory(event, _FROM)


class FoldProcessor(Processor):
    name = "fold"
    input_topic = Topic.CHANGES
    on_batch_failure = BatchFailure.DEAD_LETTER_EACH  # the session's next message folds a dead letter's in

    def __init__(self, chat: ChatModel | None = None) -> None:
        self._chat = chat if chat is not None and chat.serves(ModelTask.L1) else None
        self.silent = SilentMessages()
        self.sections = MessageSections()

    def accepts(self, marker: ChangeMarker) -> bool:
        """Committed messages, the message an erasure or a forget names for each session it took a message
        from, and any erasure, forget or rollback (the remembered sections go: ``_forget_sections``)."""
        return committed_upsert(marker, _FROM) or (
            marker.status is ChangeStatus.COMMITTED and marker.op in _FOLDED_AGAIN)

    async def process_batch(self, events: Sequence[Event], ctx: ProcessorContext) -> Sequence[Proposal]:
        """One capsule per session per batch: the capsule is a function of the session's stored messages,
        so folding once after the batch's last message gives the same result as folding after each."""
        last: dict[tuple[str, str], tuple[Event, MemoryUnit]] = {}
        for event in events:
            self._forget_sections(event)
            mem = _session_message(event)
            if mem is not None and mem.session_id is not None:
                last[(mem.scope.path, mem.session_id)] = (event, mem)
        out: list[Proposal] = []
        for event, mem in last.values():
            out += await self._fold(event, mem, ctx)
        return out

    def _forget_sections(self, event: Event) -> None:
        """An erasure, a forget or a rollback: the remembered sections go (they may quote what it took)."""
        if isinstance(event, ChangeEvent) and event.op in _FOLDED_AGAIN:
            self.sections.clear()

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        self._forget_sections(event)
        mem = _session_message(event)
        if mem is None or mem.session_id is None:
            return []
        return await self._fold(event, mem, ctx)

    async def _fold(self, event: Event, mem: MemoryUnit, ctx: ProcessorContext) -> list[Proposal]:
        assert mem.session_id is not None
        reader = ctx.require_reader()
        if self._chat is not None:
            messages = reader.session_messages(mem.scope, mem.session_id)
            if not reader.erasure_pending(mem.scope, [m.memory_id for m in messages]):
                return await self._summarised(event, mem, messages)
            # a message of the session is about to be erased (a replay that has not reached its erasure): no model
            # reads it; the extractive capsule stands in until the erasure folds the session again
        # decoded: the first message (the capsule's date) and those not known to give the capsule nothing
        count, messages = reader.session_read(mem.scope, mem.session_id, lambda line: line not in self.silent)
        if not messages:
            return []
        sections, sources = capsule_sections(messages, self.silent, self.sections)
        sections = flat_sections(sections)
        evidence = [messages[0].memory_id, *(mid for mid in sources if mid != messages[0].memory_id)]
        content = render_capsule(mem.session_id, count, messages[0], sections)
        return [self._capsule(event, mem, content, evidence, messages[0], Method.EXTRACTIVE,
                              {"sections": sections, "turns": count})]

    async def _summarised(self, event: Event, mem: MemoryUnit, messages: Sequence[MemoryUnit]) -> list[Proposal]:
        """The capsule a model writes from the whole transcript (so it cites every message)."""
        assert mem.session_id is not None and self._chat is not None
        if not messages:
            return []
        sections = extractive_sections(messages, self.silent, self.sections)
        transcript = "\n".join(f"[{m.source_id}] {m.role}: {m.content}" for m in messages)
        result = await self._chat.structured(ModelTask.L1, mem.scope, [
            {"role": "system", "content": "Summarise this conversation session for long-term memory. "
             "Return JSON with summary, decisions, constraints, corrections, open_questions. Quote facts; "
             "do not invent anything that is not in the transcript."},
            {"role": "user", "content": transcript},
        ], CapsuleSummary, sources=[m.memory_id for m in messages])
        s = result.value
        llm_sections = flat_sections({
            "decisions": _bounded(s.decisions), "constraints": _bounded(s.constraints),
            "corrections": _bounded(s.corrections), "open_questions": _bounded(s.open_questions),
            "numbers": sections["numbers"], "paths": sections["paths"]})
        content = render_capsule(mem.session_id, len(messages), messages[0], llm_sections, capsule.flat(s.summary))
        return [self._capsule(event, mem, content, [m.memory_id for m in messages], messages[0], Method.LLM,
                              {"sections": llm_sections, "turns": len(messages)}, result.model, result.prompt_hash)]

    def _capsule(self, event: Event, mem: MemoryUnit, content: str, evidence: list[str], first: MemoryUnit,
                 method: Method, attributes: dict[str, object], model: str | None = None,
                 prompt_hash: str | None = None) -> Proposal:
        capsule = derived_memory(
            scope=mem.scope, session_id=mem.session_id, layer=Layer.L1, kind=Kind.CAPSULE, content=content,
            evidence=evidence, processor=self.name, method=method, id_parts=capsule_id_parts(mem),
            valid_from=first.valid_from, attributes=attributes, model=model,
            prompt_hash=prompt_hash,  # no source event: a capsule is derived from all of them
        )
        # after a forget or a rollback the capsule (kept) may return to a version applied before
        again = isinstance(event, ChangeEvent) and event.op in (ProposalOp.FORGET, ProposalOp.ROLLBACK)
        return upsert_proposal(capsule, processor=self.name, cause=event, per_cause=again)
