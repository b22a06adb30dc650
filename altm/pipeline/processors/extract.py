"""extract: L0 changes → typed L2 atoms with evidence (cue rules, or structured extraction by a model)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from altm.core import ChangeMarker, Event, Kind, Layer, MemoryUnit, Method, Proposal
from altm.core.topics import Topic
from altm.models import ChatModel, ModelTask
from altm.pipeline.processors import _rules as rules
from altm.pipeline.processors._base import (
    Processor,
    ProcessorContext,
    committed_memory,
    committed_upsert,
    derived_memory,
    norm,
    upsert_proposal,
)

ATOM_KINDS = (Kind.FACT, Kind.PREFERENCE, Kind.DECISION, Kind.ISSUE, Kind.TASK, Kind.OUTCOME, Kind.HEURISTIC,
              Kind.ANTI_PATTERN)
_EXTRACT_ROLES = frozenset({"user", "tool"})
_FROM = frozenset({Layer.L0})


MAX_ATTRIBUTE_CHARS = 2000
"""The longest free-text attribute (subject, pattern, why it is bad, what is better) kept from a model's atom."""


class ExtractedAtom(BaseModel):
    kind: Literal["fact", "preference", "decision", "issue", "task", "outcome", "heuristic", "anti_pattern"]
    content: str = Field(min_length=3, max_length=2000, description="One self-contained statement")
    subject: str | None = Field(default=None, description="What the statement is about, e.g. 'deadline'")
    pattern: str | None = None
    why_bad: str | None = None
    better_alternative: str | None = None
    success: bool | None = Field(default=None, description="For outcomes: did it work?")


class ExtractionResult(BaseModel):
    atoms: list[ExtractedAtom] = Field(default_factory=list, max_length=32)


_SYSTEM = (
    "Extract durable memories from one chat message. Kinds: fact, preference, decision, issue, task, outcome, "
    "heuristic (what worked), anti_pattern (pattern, why_bad, better_alternative). Each atom must be stated "
    "in the message; never invent. Return JSON {\"atoms\": [...]}; an empty list when nothing is worth keeping."
)


def atom_attributes(kind: Kind, sentence: str, extra: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    subject = attrs.get("subject") or rules.subject_of(sentence)
    if subject:
        attrs["subject"] = subject
    values = rules.values_of(sentence)
    if values.asserted or values.negated:
        attrs["values"] = values.asserted
        attrs["negated_values"] = values.negated
    if rules.CORRECTION_CUES.search(sentence):
        attrs["correction"] = True
    if kind is Kind.PREFERENCE:  # a model names the subject; the rules take the words after the cue verb
        topic = str(extra["subject"]).casefold() if extra.get("subject") else rules.topic_of(sentence)
        attrs["facet_key"] = f"preference:{topic}"
    if kind is Kind.FACT and re.search(r"\b(?:i'm|i am)\s+[A-Z][a-z]+\b", sentence):
        attrs["facet_key"] = "identity:name"
    if kind is Kind.FACT and re.search(r"\bi\s+(?:lead|manage|run|work (?:at|for|on|as))\b", sentence,
                                             re.IGNORECASE):
        attrs["facet_key"] = "identity:role"
    return attrs


class ExtractProcessor(Processor):
    name = "extract"
    input_topic = Topic.CHANGES

    def __init__(self, chat: ChatModel | None = None) -> None:
        self._chat = chat if chat is not None and chat.serves(ModelTask.L2) else None
        self._atoms = self._model_atoms if self._chat is not None else self._rule_atoms

    def accepts(self, marker: ChangeMarker) -> bool:
        return committed_upsert(marker, _FROM)

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        mem = committed_memory(event, _FROM)
        if mem is None or mem.role not in _EXTRACT_ROLES:
            return []
        reader = ctx.require_reader() if self._chat is not None else None
        if reader is not None and (not reader.holds(mem.scope, mem.memory_id)
                                   or reader.erasure_pending(mem.scope, [mem.memory_id])):
            return []  # erased since this change (a deferred or lagging item), or about to be (a replay that has
            # not reached its erasure yet): its text goes to no model
        unique = {a.memory_id: a for a in await self._atoms(mem)}
        return [upsert_proposal(a, processor=self.name, cause=event) for a in unique.values()]

    async def _model_atoms(self, mem: MemoryUnit) -> list[MemoryUnit]:
        assert self._chat is not None
        result = await self._chat.structured(ModelTask.L2, mem.scope, [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": mem.content},
        ], ExtractionResult, sources=[mem.memory_id])
        atoms: list[MemoryUnit] = []
        for item in result.value.atoms:
            kind = Kind(item.kind)
            # a model's free text is bounded as content is (an attribute over the bound is left out, not kept whole)
            extra = {k: v for k, v in item.model_dump(exclude={"kind", "content"}).items()
                     if not (isinstance(v, str) and len(v) > MAX_ATTRIBUTE_CHARS)}
            if kind is Kind.ANTI_PATTERN:
                extra["occurrences"] = 1
            atoms.append(self._atom(mem, kind, item.content, extra, Method.LLM, result.model, result.prompt_hash))
        return atoms

    async def _rule_atoms(self, mem: MemoryUnit) -> list[MemoryUnit]:
        atoms: list[MemoryUnit] = []
        for sentence in rules.sentences(mem.content):
            match = rules.classify(sentence)
            if match is None:
                continue
            atoms.append(self._atom(mem, match.kind, sentence, match.attributes, Method.HEURISTIC))
            better = match.attributes.get("better_alternative")
            if match.kind is Kind.ANTI_PATTERN and isinstance(better, str) and better:
                tip = f"Instead of {match.attributes['pattern']}: {better}."
                atoms.append(self._atom(mem, Kind.HEURISTIC, tip,
                                        {"occurrences": 1, "successes": 0, "derived_from": "anti_pattern"},
                                        Method.HEURISTIC))
        return atoms

    def _atom(self, mem: MemoryUnit, kind: Kind, content: str, extra: dict[str, Any], method: Method,
              model: str | None = None, prompt_hash: str | None = None) -> MemoryUnit:
        attributes = atom_attributes(kind, content, extra)
        if mem.role != "user":  # a tool's words are evidence about the world, never the user's persona
            attributes.pop("facet_key", None)
        if isinstance(turn := mem.attributes.get("turn_id"), str):  # which of two said at one time came later
            attributes["turn_id"] = turn
        return derived_memory(
            scope=mem.scope, session_id=mem.session_id, layer=Layer.L2, kind=kind, content=content,
            evidence=[mem.memory_id], processor=self.name, method=method,
            id_parts=[mem.scope.path, "L2", kind.value, mem.memory_id, norm(content)],
            valid_from=mem.valid_from, attributes=attributes, model=model,
            prompt_hash=prompt_hash, source_event_id=mem.provenance.source_event_id, role=mem.role,
            source_id=mem.source_id,
        )
