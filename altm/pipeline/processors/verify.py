"""verify: L2 changes → trust verdicts, by cross-verification against same-subject atoms (or NLI).

Verdicts are recomputed for the whole subject group from the stored atoms, so the final verdicts do not
depend on arrival order. A reviewer's verdict (``ground_truth``) is not recomputed, and an atom a reviewer
rejected takes no part in the others' verdicts.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from altm.core import (
    ChangeEvent,
    ChangeMarker,
    ChangeStatus,
    Event,
    Kind,
    Layer,
    MemoryUnit,
    Proposal,
    ProposalOp,
    SetTrustProposal,
    Trust,
    TrustMethod,
    TrustStatus,
    TrustVerdict,
)
from altm.core.topics import Topic
from altm.models import ChatModel, ModelTask
from altm.pipeline.processors._base import (
    Processor,
    ProcessorContext,
    committed_memory,
    committed_upsert,
    proposal,
    said_by_user,
)
from altm.pipeline.processors.facets import order

_FROM = frozenset({Layer.L2})


class NLIJudgement(BaseModel):
    label: Literal["entailment", "contradiction", "neutral"]
    confidence: float = Field(ge=0.0, le=1.0)


def _vals(mem: MemoryUnit, key: str) -> set[str]:
    raw = mem.attributes.get(key) or []
    return {str(v).casefold() for v in raw} if isinstance(raw, list) else set()


class _Claim(NamedTuple):
    """What :func:`conflicts` and :func:`agrees` compare of an atom."""

    values: set[str]
    negated: set[str]
    content_hash: str
    evidence: frozenset[str]


def _claim(mem: MemoryUnit) -> _Claim:
    return _Claim(_vals(mem, "values"), _vals(mem, "negated_values"), mem.content_hash, frozenset(mem.evidence))


def _conflict(older: _Claim, newer: _Claim) -> bool:
    return bool(older.values & newer.negated) or bool(older.values and newer.values
                                                       and not (older.values & newer.values))


def _independent(a: _Claim, b: _Claim) -> bool:
    return a.content_hash != b.content_hash and not a.evidence & b.evidence


def _agree(a: _Claim, b: _Claim) -> bool:
    return _independent(a, b) and bool(a.values & b.values)


def conflicts(older: MemoryUnit, newer: MemoryUnit) -> bool:
    """Same subject, different values: the newer negates an older value, or both assert disjoint values."""
    return _conflict(_claim(older), _claim(newer))


def independent(a: MemoryUnit, b: MemoryUnit) -> bool:
    """Another statement (not a verbatim duplicate) from other messages: what may support ``a`` (a message that
    repeats its claim does not verify itself: "Confirmed again: …"), by shared values or by a model's entailment."""
    return _independent(_claim(a), _claim(b))


def agrees(a: MemoryUnit, b: MemoryUnit) -> bool:
    """Independent support (:func:`independent`) asserting a shared value."""
    return _agree(_claim(a), _claim(b))


def outranks(newer: MemoryUnit, older: MemoryUnit) -> bool:
    """Whether ``newer`` may contradict ``older``: a tool's output or an assistant's claim never outranks what
    the user said (that conflict goes to review instead)."""
    return said_by_user(newer) or not said_by_user(older)


def _held_for_review(mem: MemoryUnit) -> Trust | None:
    """A tool's anti-pattern is reviewed before it guards anything (the guard skips it until verified)."""
    if mem.kind is Kind.ANTI_PATTERN and mem.role == "tool":
        return Trust(status=TrustStatus.UNCERTAIN, method=TrustMethod.CONFIDENCE, confidence=0.5,
                     reason="an anti-pattern stated by a tool: it guards nothing until a review approves it")
    return None


_NOT_FOR_NLI = frozenset({TrustStatus.CONTRADICTED, TrustStatus.UNCERTAIN})
"""Verdicts a model's entailment does not replace: a contradiction, and a hold for review (a tool's
anti-pattern, a tool's statement against the user's): only a reviewer lifts a hold."""


def _rejected_by_review(mem: MemoryUnit) -> bool:
    """A reviewer rejected it: it neither supports nor contradicts anything (its own verdict stands)."""
    return mem.trust.method is TrustMethod.GROUND_TRUTH and mem.trust.status is TrustStatus.CONTRADICTED


def _approved_by_review(mem: MemoryUnit) -> bool:
    return mem.trust.method is TrustMethod.GROUND_TRUTH and mem.trust.status is TrustStatus.VERIFIED


def _standing_approvals(earlier: Sequence[MemoryUnit],
                        conflict: Callable[[MemoryUnit, MemoryUnit], bool] = conflicts) -> list[MemoryUnit]:
    """The reviewer-approved atoms among ``earlier`` (in validity order) that no later approved one conflicts
    with: a reviewer who approved a correction approved it over the value it replaced."""
    approved = [a for a in earlier if _approved_by_review(a)]
    return [a for j, a in enumerate(approved) if not any(conflict(a, b) for b in approved[j + 1:])]


class _Claims:
    """:func:`conflicts` and :func:`agrees` over one group, each atom's claim read once (each verdict compares an
    atom with every other: read per pair, the values were most of verify's time)."""

    def __init__(self, group: Sequence[MemoryUnit]) -> None:
        self._of = {m.memory_id: _claim(m) for m in group}

    def conflicts(self, older: MemoryUnit, newer: MemoryUnit) -> bool:
        return _conflict(self._of[older.memory_id], self._of[newer.memory_id])

    def agrees(self, a: MemoryUnit, b: MemoryUnit) -> bool:
        return _agree(self._of[a.memory_id], self._of[b.memory_id])


def cross_verify(group: Sequence[MemoryUnit]) -> dict[str, Trust]:
    """Verdicts for every atom of one subject group (ordered by validity time)."""
    ordered = sorted(group, key=order)
    subject = str(ordered[0].attributes.get("subject", "")) if ordered else ""
    claims = _Claims(ordered)
    conflict, agree = claims.conflicts, claims.agrees  # as the module's, each atom's values read once
    out: dict[str, Trust] = {}
    for i, mem in enumerate(ordered):
        later = [b for b in ordered[i + 1 :] if conflict(mem, b) and outranks(b, mem)]
        earlier = [a for a in ordered[:i] if conflict(a, mem)]
        support = list(islice((o for o in ordered if o.memory_id != mem.memory_id and agree(mem, o)), 2))
        standing = _standing_approvals(ordered[:i], conflict)
        held = _held_for_review(mem)
        if held is not None:
            out[mem.memory_id] = held
        elif earlier and not all(outranks(mem, a) for a in earlier):
            a = next(a for a in reversed(earlier) if not outranks(mem, a))
            out[mem.memory_id] = Trust(
                status=TrustStatus.UNCERTAIN, method=TrustMethod.CROSS_VERIFY, confidence=0.4,
                contradicting_id=a.memory_id,
                reason=f"a {mem.role or 'non-user'} statement conflicts with what the user said about {subject!r}; "
                       "it cannot outrank the user's words: needs review")
        elif later:
            b = later[0]
            out[mem.memory_id] = Trust(
                status=TrustStatus.CONTRADICTED, method=TrustMethod.CROSS_VERIFY, confidence=0.7,
                contradicting_id=b.memory_id,
                reason=f"a later memory about {subject!r} states {sorted(_vals(b, 'values'))} instead of "
                       f"{sorted(_vals(mem, 'values'))}",
            )
        elif against := [a for a in standing if conflict(a, mem)]:  # a cue cannot overturn a reviewer
            out[mem.memory_id] = Trust(
                status=TrustStatus.UNCERTAIN, method=TrustMethod.CROSS_VERIFY, confidence=0.4,
                contradicting_id=against[-1].memory_id,
                reason=f"conflicts with a reviewer-approved memory about {subject!r}: needs review")
        elif any(agree(mem, a) for a in standing):
            out[mem.memory_id] = Trust(
                status=TrustStatus.VERIFIED, method=TrustMethod.CROSS_VERIFY, confidence=0.8,
                reason=f"agrees with a reviewer-approved memory about {subject!r}")
        elif earlier:
            a = earlier[-1]
            corrected = bool(mem.attributes.get("correction"))
            out[mem.memory_id] = Trust(
                status=TrustStatus.VERIFIED if corrected else TrustStatus.UNCERTAIN,
                method=TrustMethod.CROSS_VERIFY, confidence=0.7 if corrected else 0.5,
                contradicting_id=a.memory_id,
                reason=(f"replaces an earlier value about {subject!r}; stated as a correction" if corrected
                        else f"conflicts with an earlier memory about {subject!r}; no correction cue, "
                             "needs review"),
            )
        elif support:  # not how many: each new one would change every other verdict of the subject
            out[mem.memory_id] = Trust(
                status=TrustStatus.VERIFIED, method=TrustMethod.CROSS_VERIFY, confidence=0.8,
                reason=f"another memory about {subject!r} agrees" if len(support) == 1
                else f"other memories about {subject!r} agree",
            )
        else:
            out[mem.memory_id] = Trust(
                status=TrustStatus.UNVERIFIABLE, method=TrustMethod.CONFIDENCE, confidence=0.5,
                reason=f"no other memory about {subject!r} to compare with" if subject
                else "no subject to cross-verify against",
            )
    return out


# changes after which an atom's subject is judged again: an erasure took an atom of it (and cleared the
# verdicts that named it), a review judged one (a rejected atom no longer supports or contradicts the others)
_JUDGED_AGAIN = frozenset({ProposalOp.ERASE, ProposalOp.REVIEW})


def _subject_atom(event: Event) -> MemoryUnit | None:
    """The atom whose subject is verified: a committed one, or one an erasure or a review names."""
    if isinstance(event, ChangeEvent) and event.status is ChangeStatus.COMMITTED and event.op in _JUDGED_AGAIN:
        return event.memory if event.memory is not None and event.memory.layer is Layer.L2 else None
    return committed_memory(event, _FROM)


SUBJECTS_KEPT = 10_000
"""Subject groups whose verdicts :class:`Proposed` remembers (the least recently judged is let go first)."""
MEMBERS_KEPT = 200_000
"""The members of those groups it remembers in all (some 150 bytes each: a digest of the id and of the verdict)."""


def same_verdict(a: Trust, b: Trust) -> bool:
    """The same verdict, whenever it was given."""
    return a.model_dump(exclude={"verified_at"}) == b.model_dump(exclude={"verified_at"})


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def _verdict_digest(trust: Trust) -> int:
    """A verdict, whenever it was given, in eight bytes."""
    return _digest(trust.model_dump_json(exclude={"verified_at"}))


class Proposed:
    """The verdicts this process last proposed, per subject group: a member's verdict is proposed again only when
    it differs from the last one proposed or from the stored one. Each atom of a subject used to propose a verdict
    for every member (quadratic records in the sayings of one subject). The last one proposed is what the writer
    will hold once it has applied what is on its way (proposals of one user are applied in the order they are
    proposed): comparing with the stored verdict alone would let a stale verdict still on its way stand. A group
    this process has not judged since it started (or let go) has every member's verdict proposed, as has an
    erasure's or a review's: what the writer changed besides shows in the stored verdicts. Each member is kept as
    digests of its id and its verdict (a full verdict was some 1.3 KB a member), and the members kept in all are
    bounded as well as the groups."""

    def __init__(self, kept: int = SUBJECTS_KEPT, members_kept: int = MEMBERS_KEPT) -> None:
        self._kept, self._members_kept = kept, members_kept
        self._groups: OrderedDict[tuple[str, ...], dict[int, int]] = OrderedDict()
        self.members = 0
        """How many members are remembered in all."""

    def changed(self, key: tuple[str, str], group: Sequence[MemoryUnit], verdicts: dict[str, Trust], *,
                all_of_them: bool) -> list[MemoryUnit]:
        """The members of ``group`` (each with a verdict in ``verdicts``) whose verdict is to be proposed, now
        remembered as proposed."""
        last = self._groups.pop(key, None)
        self.members -= len(last or {})
        last = None if all_of_them else last
        members = [(m, _digest(m.memory_id), _verdict_digest(verdicts[m.memory_id])) for m in group]
        out = [m for m, id_digest, verdict in members
               if last is None or last.get(id_digest) != verdict or not same_verdict(m.trust, verdicts[m.memory_id])]
        now = {id_digest: verdict for _, id_digest, verdict in members}
        self._groups[key] = now  # each member's verdict, proposed now or proposed before as it is now
        self.members += len(now)
        while len(self._groups) > 1 and (len(self._groups) > self._kept or self.members > self._members_kept):
            _, gone = self._groups.popitem(last=False)  # the group judged now stays, however large
            self.members -= len(gone)
        return out


class VerifyProcessor(Processor):
    name = "verify"
    input_topic = Topic.CHANGES

    def __init__(self, chat: ChatModel | None = None) -> None:
        self._chat = chat if chat is not None and chat.serves(ModelTask.NLI) else None
        self._proposed = Proposed()

    def forget_partitions(self, partitions: Sequence[int]) -> None:
        """Another worker judged the subjects of given-up partitions meanwhile, and what it proposed may still
        be on its way to the writer when they come back: every member's verdict is proposed again then."""
        if partitions:
            self._proposed = Proposed()

    def accepts(self, marker: ChangeMarker) -> bool:
        """Committed atoms, the atom an erasure names for each subject it took an atom of, reviewed atoms."""
        return committed_upsert(marker, _FROM) or (
            marker.status is ChangeStatus.COMMITTED and marker.op in _JUDGED_AGAIN and marker.layer is Layer.L2)

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        mem = _subject_atom(event)
        if mem is None:
            return []
        subject = mem.attributes.get("subject")
        group = ctx.require_reader().atoms_with(mem.scope, "subject", str(subject)) if subject else [mem]
        group = [m for m in group or [mem] if not _rejected_by_review(m)]
        verdicts = cross_verify(group)
        if self._chat is not None and len(group) > 1 and mem.memory_id in verdicts:
            reader = ctx.require_reader()  # what is about to be erased (a replay) goes to no model
            asked = [m for m in group if not reader.erasure_pending(m.scope, [m.memory_id, *m.evidence])]
            if any(m.memory_id == mem.memory_id for m in asked):
                verdicts = await self._nli(self._chat, mem, asked, verdicts)
        judged = [m for m in group if m.trust.method is not TrustMethod.GROUND_TRUTH and m.memory_id in verdicts]
        if subject:
            again = isinstance(event, ChangeEvent) and event.op in _JUDGED_AGAIN
            judged = self._proposed.changed((mem.scope.path, str(subject)), judged, verdicts, all_of_them=again)
        return [
            proposal(SetTrustProposal, scope=m.scope, processor=self.name, cause=event,
                     verdict=TrustVerdict(memory_id=m.memory_id, trust=verdicts[m.memory_id]))
            for m in judged
        ]

    @staticmethod
    async def _nli(chat: ChatModel, mem: MemoryUnit, group: Sequence[MemoryUnit],
                   verdicts: dict[str, Trust]) -> dict[str, Trust]:
        out = dict(verdicts)
        for other in group:
            if other.memory_id == mem.memory_id:
                continue
            result = await chat.structured(ModelTask.NLI, mem.scope, [
                {"role": "system", "content": "Does the premise entail, contradict or not relate to the "
                 "hypothesis? Answer JSON {label, confidence}."},
                {"role": "user", "content": f"Premise: {other.content}\nHypothesis: {mem.content}"},
            ], NLIJudgement, sources=[mem.memory_id, other.memory_id, *mem.evidence, *other.evidence])
            j = result.value
            if j.label == "contradiction":
                older, newer = sorted((other, mem), key=order)
                if not outranks(newer, older):  # cross_verify already sent the newer one to review
                    continue
                out[older.memory_id] = Trust(
                    status=TrustStatus.CONTRADICTED, method=TrustMethod.NLI, confidence=j.confidence,
                    contradicting_id=newer.memory_id, reason=f"NLI ({result.model}): contradicted by a later memory",
                )
            elif (j.label == "entailment" and out[mem.memory_id].status not in _NOT_FOR_NLI
                  and independent(mem, other)):  # a message entails its own repetition: no support
                out[mem.memory_id] = Trust(
                    status=TrustStatus.VERIFIED, method=TrustMethod.NLI, confidence=j.confidence,
                    reason=f"NLI ({result.model}): entailed by {other.memory_id}",
                )
        return out
