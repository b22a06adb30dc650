"""govern: L3 scenes, L4 persona facets with versioned supersede, exact-duplicate merge.

Without a model only non-destructive or evidence-certain actions are taken (exact duplicates merge;
a facet is superseded only when the user states a correction); anything else is recorded as a held
action for review instead of being guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from altm.core import (
    ChangeEvent,
    ChangeMarker,
    ChangeStatus,
    EdgeType,
    Event,
    HeldAction,
    HoldActionProposal,
    Kind,
    Layer,
    MemoryUnit,
    Merge,
    MergeProposal,
    Method,
    Proposal,
    ProposalOp,
    Scope,
    SupersedeProposal,
    Supersession,
)
from altm.core import scene as scene_text
from altm.core.topics import Topic
from altm.models import ChatModel, ModelTask
from altm.pipeline.processors._base import (
    BatchFailure,
    Processor,
    ProcessorContext,
    committed_memory,
    committed_upsert,
    derived_memory,
    norm,
    proposal,
    said_by_user,
    upsert_proposal,
)
from altm.pipeline.processors.facets import facet_version, held_supersede_id, order, rejected, statement_of
from altm.store import MemoryReader

_ATOMS = frozenset({Layer.L2})
SUPERSEDE_MIN_CONFIDENCE = 0.7


class SupersedeRubric(BaseModel):
    supersede: bool
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = Field(min_length=1, max_length=500)


_SCENE_OPS = frozenset({ProposalOp.LINK_MEMORY, ProposalOp.UPSERT_EDGE, ProposalOp.REVIEW})
_NAMING_OPS = frozenset({ProposalOp.LINK_MEMORY, ProposalOp.REVIEW, ProposalOp.ERASE, ProposalOp.FORGET,
                         ProposalOp.ROLLBACK})
"""Ops whose change names the nodes whose scenes to compute again: a link's new mentions, the nodes of the atom a
review judged, the anchors of the scenes an erasure took or whose atoms a forget took (computed again from what
is left), the nodes of the atoms a rollback put back."""
_RECOMPUTING_OPS = frozenset({ProposalOp.REVIEW, ProposalOp.ERASE, ProposalOp.FORGET, ProposalOp.ROLLBACK})
"""... of which these may return a scene to a version applied before (see :func:`upsert_proposal`)."""
_RELEASING_OPS = frozenset({ProposalOp.FORGET, ProposalOp.ERASE})
"""Ops whose changes may carry atoms they released from a merge into a memory they removed."""


def _released_atom(event: Event) -> MemoryUnit | None:
    """An atom a forget or an erasure changed that nothing supersedes now: one it released from a merge into
    what it removed folds again into the earliest of its duplicates, as if the removed one had never been."""
    if not isinstance(event, ChangeEvent) or event.status is not ChangeStatus.COMMITTED:
        return None
    mem = event.memory
    if event.op not in _RELEASING_OPS or mem is None or mem.layer not in _ATOMS or mem.superseded_by is not None:
        return None
    return mem


def _reviewed_atom(event: ChangeEvent) -> MemoryUnit | None:
    """An atom a review left in recall (approved, or released from a rejected one it was merged into): the exact
    duplicates of it fold into the earliest of them again."""
    mem = event.memory
    if event.status is not ChangeStatus.COMMITTED or event.op is not ProposalOp.REVIEW or mem is None \
            or mem.layer not in _ATOMS or mem.superseded_by is not None or rejected(mem):
        return None
    return mem


_MOVING_OPS = frozenset({ProposalOp.FORGET, ProposalOp.ERASE, ProposalOp.REVIEW})
"""Ops whose changes may carry persona facets they released (what superseded them went) or moved onto a later
saying (the first went): placed again (see :meth:`GovernProcessor._replace`)."""


def _moved_facet(event: Event) -> MemoryUnit | None:
    """A persona facet a forget, an erasure or a review changed and kept (not one it removed)."""
    if not isinstance(event, ChangeEvent) or event.status is not ChangeStatus.COMMITTED or event.op not in _MOVING_OPS:
        return None
    mem = event.memory
    if mem is None or mem.layer is not Layer.L4 or mem.memory_id in event.removed_ids or not said_by_user(mem):
        return None
    return mem


@dataclass
class _Batch:
    """What one batch of changes proposed already: what a batch proposes is applied after it, so its later
    changes see the same state and would propose it again."""

    scened: set[tuple[str, str]] = field(default_factory=set)  # (scope path, node id) whose scene it computed
    merged: set[tuple[str, str]] = field(default_factory=set)  # (duplicate, canonical) merges it proposed

    def new_merges(self, merges: Sequence[MergeProposal]) -> list[MergeProposal]:
        """``merges`` less those proposed earlier in the batch: each new duplicate of a statement said n times
        proposed every unapplied merge of the group again (1,800 turns restating one line per user made 454,565
        records, 16 merges a turn at 300 turns)."""
        out = [p for p in merges if (p.merge.duplicate_id, p.merge.canonical_id) not in self.merged]
        self.merged.update((p.merge.duplicate_id, p.merge.canonical_id) for p in out)
        return out


class GovernProcessor(Processor):
    name = "govern"
    input_topic = Topic.CHANGES
    on_batch_failure = BatchFailure.DEAD_LETTER_EACH

    def __init__(self, chat: ChatModel | None = None) -> None:
        self._chat = chat if chat is not None and chat.serves(ModelTask.GOVERNANCE) else None

    def accepts(self, marker: ChangeMarker) -> bool:
        """Committed L2 atoms (merges, facets), atoms a forget or an erasure released (merges), facets a forget,
        an erasure or a review released or moved (placed again), and committed links, edges, reviews of atoms,
        erasures, forgets and rollbacks (scenes)."""
        return committed_upsert(marker, _ATOMS) or (marker.status is ChangeStatus.COMMITTED and (
            marker.op in _SCENE_OPS or (marker.op in _RELEASING_OPS and marker.layer in _ATOMS)
            or (marker.op in _MOVING_OPS and marker.layer is Layer.L4)
            or (marker.op in _RELEASING_OPS and marker.removes) or marker.op is ProposalOp.ROLLBACK))

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        return await self._proposals(event, ctx, ctx.require_reader(), _Batch())

    async def process_batch(self, events: Sequence[Event], ctx: ProcessorContext) -> Sequence[Proposal] | None:
        """What :meth:`process` proposes event by event, with a node's scene computed once per batch: at the
        first change of the batch that names it, where it would be proposed first (a batch of one
        conversation's links names the same people and dates again and again: 3,184 scenes computed for 778
        distinct in a replay of 500 LoCoMo turns). What a batch proposes is applied after it, so the later
        computations gave the same scene, which the driver sent once; an atom another batch commits meanwhile
        names the node again in a later batch, which computes the scene again. With a governance model, per
        event (``None``): a facet's supersede asks the model, and a deferral must keep back that change alone,
        not the batch."""
        if self._chat is not None:
            return None
        reader = ctx.require_reader()
        batch = _Batch()
        return [p for event in events for p in await self._proposals(event, ctx, reader, batch)]

    async def _proposals(self, event: Event, ctx: ProcessorContext, reader: MemoryReader,
                         batch: _Batch) -> list[Proposal]:
        """An atom's merges and facet, or the scenes of the nodes a change names, less what ``batch`` proposed
        already (it gains what is proposed here)."""
        mem = committed_memory(event, _ATOMS)
        if mem is not None:
            return await self._atom(event, ctx, reader, mem, batch)
        if (released := _released_atom(event)) is not None:
            return [*self._merge_duplicates(event, reader, released)]
        if (moved := _moved_facet(event)) is not None:
            return await self._replace(event, reader, moved)
        if not isinstance(event, ChangeEvent):
            return []
        out: list[Proposal] = []
        if (approved := _reviewed_atom(event)) is not None:  # duplicates its rejection released fold in again
            out += self._merge_duplicates(event, reader, approved)
        reviewed = event.op in _RECOMPUTING_OPS  # computed for it whatever the batch computed already
        for node_id in self._scene_nodes(event, reader):
            if reviewed or (event.scope.path, node_id) not in batch.scened:
                batch.scened.add((event.scope.path, node_id))
                out += self._scene(event, reader, node_id)
        return out

    async def _atom(self, event: Event, ctx: ProcessorContext, reader: MemoryReader, mem: MemoryUnit,
                    batch: _Batch) -> list[Proposal]:
        if self._chat is not None and (not reader.holds(mem.scope, mem.memory_id)
                                       or reader.erasure_pending(mem.scope, [mem.memory_id, *mem.evidence])):
            return []  # erased since this change (a deferred or lagging item), or about to be (a replay that has
            # not reached its erasure yet): its text goes to no model
        merges = self._merge_duplicates(event, reader, mem)
        if any(p.merge.duplicate_id == mem.memory_id for p in merges):
            return [*batch.new_merges(merges)]  # a duplicate adds evidence to its canonical atom, not a facet
        return [*batch.new_merges(merges), *await self._facet(event, ctx, reader, mem)]

    def _scene_nodes(self, event: ChangeEvent, reader: MemoryReader) -> list[str]:
        """The nodes whose scene a committed change (a link, an edge) may have changed."""
        if event.status is not ChangeStatus.COMMITTED:
            return []
        if event.op in _NAMING_OPS:
            return list(event.mentioned_ids)
        if event.op is ProposalOp.UPSERT_EDGE and event.memory_id:  # an edge an older link proposed alone
            edge = reader.edge(event.scope, event.memory_id)
            if edge is not None and edge["edge_type"] == EdgeType.MENTIONS.value:
                return [str(edge["dst_id"])]
        return []

    def _merge_duplicates(self, event: Event, reader: MemoryReader, mem: MemoryUnit) -> list[MergeProposal]:
        """Exact duplicates fold into the earliest of them; not into one a reviewer rejected (a re-statement of
        it vanished into the rejected atom, out of recall with it)."""
        same = self._unmerged(reader, mem)
        if len(same) < 2:
            return []
        canonical = same[0]
        return [
            proposal(MergeProposal, scope=mem.scope, processor=self.name, cause=event,
                     merge=Merge(canonical_id=canonical.memory_id, duplicate_id=dup.memory_id,
                                 reason="exact duplicate (same kind and content hash)"))
            for dup in same[1:] if dup.superseded_by is None
        ]

    def _unmerged(self, reader: MemoryReader, mem: MemoryUnit) -> list[MemoryUnit]:
        """``mem``'s exact duplicates (itself among them) a merge may fold or fold into, earliest first: none a
        reviewer rejected, and on the model path none about to be erased (a replay): it made no facet (its text
        goes to no model), so a re-statement folded into it was left with none. Those merged already are not
        read (a line said a thousand times is a group of a thousand): each was later than what it was merged
        into, which is here or merged into an earlier one, unless what it was merged into is rejected or about
        to be erased and not released yet; then the whole group is read."""
        def candidates(group: list[MemoryUnit]) -> list[MemoryUnit]:
            kept = [m for m in group if not rejected(m)]
            if self._chat is not None:
                kept = [m for m in kept if not reader.erasure_pending(m.scope, [m.memory_id, *m.evidence])]
            return sorted(kept, key=order)

        group = reader.same_content(mem.scope, Layer.L2, mem.kind.value, mem.content_hash, merged=False)
        same = candidates(group)
        if len(same) < len(group):  # one of them rejected or about to be erased: its merged ones count too
            same = candidates(reader.same_content(mem.scope, Layer.L2, mem.kind.value, mem.content_hash))
        return same

    async def _facet(self, event: Event, ctx: ProcessorContext, reader: MemoryReader, mem: MemoryUnit
                     ) -> list[Proposal]:
        """A facet version per distinct statement, placed in time at its first saying among the user's *atoms*
        (not when facets were written), so the version chain does not depend on arrival order: this version
        replaces the one placed just before it and is replaced by the one placed just after it."""
        facet_key = mem.attributes.get("facet_key")
        if not isinstance(facet_key, str) or mem.kind not in (Kind.PREFERENCE, Kind.FACT):
            return []
        if not said_by_user(mem):  # only the user's own statements form the persona
            return []
        atoms = self._facet_atoms(reader, mem.scope, facet_key)
        # the same statement made in several sessions is one facet version, cited from its first atom,
        # whichever of those atoms was processed first (the state must not depend on arrival order)
        first = min((a for a in atoms if norm(a.content) == norm(mem.content) and not rejected(a)), key=order,
                    default=mem)
        first = mem if order(mem) < order(first) else first
        facet = facet_version(first, facet_key)
        return [upsert_proposal(facet, processor=self.name, cause=event),
                *await self._place(event, reader, mem, first, facet, atoms)]

    async def _replace(self, event: Event, reader: MemoryReader, changed: MemoryUnit) -> list[Proposal]:
        """A persona facet a removal released (what superseded it went) or moved onto a later saying (its first
        went): placed again among the versions left, as a store that never held what went places it. Without
        this, an older version stood current beside a newer one, or a version kept its supersession by one said
        before its new first saying."""
        stored = reader.get(changed.scope, changed.memory_id)
        facet_key = stored.attributes.get("facet_key") if stored is not None else None
        if stored is None or stored.layer is not Layer.L4 or rejected(stored) or not isinstance(facet_key, str):
            return []
        atoms = self._facet_atoms(reader, stored.scope, facet_key)
        sayings = self._sayings(atoms)
        said = sayings.get(norm(statement_of(stored)))
        if said:  # placed at its first saying left
            return await self._place(event, reader, said[0], said[0], stored, atoms)
        # none of its atoms is left (retention kept the facet): placed where it stands, replaced by what follows
        later = sorted((a[0] for a in sayings.values() if order(a[0]) > order(stored)), key=order)
        steps, _ = await self._step_forward(event, reader, stored, stored, later, sayings, stored.superseded_by)
        return steps

    def _facet_atoms(self, reader: MemoryReader, scope: Scope, facet_key: str) -> list[MemoryUnit]:
        """The user's atoms of ``facet_key`` (with a model, not those about to be erased: no version it reads)."""
        atoms = reader.atoms_with(scope, "facet_key", facet_key, user_wide=True)
        if self._chat is not None:  # what is about to be erased (a replay) is no version the model reads
            atoms = [a for a in atoms if not reader.erasure_pending(a.scope, [a.memory_id, *a.evidence])]
        return atoms

    @staticmethod
    def _sayings(atoms: Sequence[MemoryUnit]) -> dict[str, list[MemoryUnit]]:
        """Each statement's atoms (none superseded or rejected), its first saying first."""
        sayings: dict[str, list[MemoryUnit]] = {}
        for atom in sorted((a for a in atoms if a.superseded_by is None and not rejected(a)), key=order):
            sayings.setdefault(norm(atom.content), []).append(atom)
        return sayings

    async def _place(self, event: Event, reader: MemoryReader, mem: MemoryUnit, first: MemoryUnit,
                     facet: MemoryUnit, atoms: Sequence[MemoryUnit]) -> list[Proposal]:
        """``facet`` (first said by ``first``) between the version placed last before it and the one placed first
        after it: what it superseded that is placed after it now, and what superseded it that is placed before it
        now, released; the one before replaced by it, it replaced by the one after; a held replacement of the one
        before by the one after, moot now, released too (void)."""
        out: list[Proposal] = []
        sayings = self._sayings(atoms)
        versions = reader.facet_versions(mem.scope, str(facet.attributes["facet_key"]))
        placed = {f.memory_id: sayings[norm(statement_of(f))][0] for f in versions if norm(statement_of(f)) in sayings}
        # versions this one superseded when it was placed later, placed after it now (an earlier saying of it
        # arrived since): no longer superseded by it
        out += [self._release(event, mem, f.memory_id, facet.memory_id) for f in versions
                if f.superseded_by == facet.memory_id and f.memory_id in placed
                and order(placed[f.memory_id]) > order(first)]
        # a replacement held for review the other way round than the two are placed now (this one's first saying
        # moved): void
        for f in versions:
            if f.memory_id != facet.memory_id and f.memory_id in placed:
                later, earlier = ((f.memory_id, facet.memory_id) if order(placed[f.memory_id]) > order(first)
                                  else (facet.memory_id, f.memory_id))
                if reader.held_pending(mem.scope, held_supersede_id(later, earlier)):
                    out.append(self._release(event, mem, later, earlier))
        stored = next((f for f in versions if f.memory_id == facet.memory_id), None)
        newer = stored.superseded_by if stored is not None else None
        if newer is not None and newer in placed and order(placed[newer]) < order(first):
            out.append(self._release(event, mem, facet.memory_id, newer))  # its first saying went: placed later
            newer = None  # as the writer has it once the release is applied
        others = [a[0] for s, a in sayings.items() if s != norm(first.content)]
        forward, following = await self._step_forward(event, reader, mem, facet,
                                                      sorted((a for a in others if order(a) > order(first)),
                                                             key=order), sayings, newer)
        out += await self._step_back(event, reader, mem, first, facet, [a for a in others if order(a) < order(first)],
                                     sayings, versions, placed, following)
        return out + forward

    async def _step_back(self, event: Event, reader: MemoryReader, mem: MemoryUnit, first: MemoryUnit,
                         facet: MemoryUnit, before: Sequence[MemoryUnit], sayings: dict[str, list[MemoryUnit]],
                         versions: Sequence[MemoryUnit], placed: dict[str, MemoryUnit],
                         following: MemoryUnit | None) -> list[Proposal]:
        """This version replaces the one placed last before it (made first when not stored yet: see
        :meth:`_made`; one retention forgot or an erasure took is passed over); with no atom of such a version
        left, a stored facet before it that retention left. A replacement of that one by ``following`` (the
        version placed next after this one) held for review is released: this one stands between them."""
        facet_key = str(facet.attributes["facet_key"])
        steps: list[Proposal] = []
        previous: MemoryUnit | None = None
        for prior in sorted(before, key=order, reverse=True):
            previous = self._made(event, reader, mem, facet_version(prior, facet_key),
                                  sayings[norm(prior.content)], steps)
            if previous is not None:
                break
        if previous is None:
            previous = max((f for f in versions
                            if f.superseded_by is None and not rejected(f) and order(f) < order(facet)
                            and norm(statement_of(f)) not in sayings), key=order, default=None)
        if previous is None or previous.content_hash == facet.content_hash:
            return steps
        if following is not None and reader.held_pending(
                mem.scope, held_supersede_id(previous.memory_id, following.memory_id)):
            steps.append(self._release(event, mem, previous.memory_id, following.memory_id))
        later = previous.superseded_by
        if later is not None and later != facet.memory_id and later in placed and order(placed[later]) > order(first):
            steps.append(self._release(event, mem, previous.memory_id, later))  # this one arrived between the two
            later = None
        if later is None or later == facet.memory_id:
            steps.append(await self._version_step(event, first, previous, facet, facet_key))
        return steps  # one replaced by a version placed before this one is left as it is

    async def _step_forward(self, event: Event, reader: MemoryReader, mem: MemoryUnit, facet: MemoryUnit,
                            after: Sequence[MemoryUnit], sayings: dict[str, list[MemoryUnit]],
                            superseded_by: str | None) -> tuple[list[Proposal], MemoryUnit | None]:
        """The version placed next after this one (``after``: the first sayings of the later statements, in
        order; one retention forgot or an erasure took is passed over), stored already (governed before it: a
        correction delivered before what it corrects, a backfill of older history, or a version left when the
        one between went), replaces it, as it would have had this one come first; one not stored yet replaces it
        when it is governed (its predecessor is then this one); not when another supersedes this one
        (``superseded_by``). The steps, and that stored version."""
        facet_key = str(facet.attributes["facet_key"])
        for nxt in after:
            following = facet_version(nxt, facet_key)
            if following.content_hash == facet.content_hash:
                return [], None
            if reader.holds(mem.scope, following.memory_id):
                break
            if not reader.removed_since(mem.scope, following.memory_id,
                                        [a.memory_id for a in sayings.get(norm(nxt.content), [nxt])]):
                return [], None  # not governed yet: it replaces this one when it is
        else:
            return [], None
        if superseded_by not in (None, following.memory_id):  # (as it stands once this placing's releases apply)
            return [], following
        return [await self._version_step(event, nxt, facet, following, facet_key)], following

    def _release(self, event: Event, mem: MemoryUnit, old_id: str, new_id: str) -> Proposal:
        """``old_id`` is no longer superseded by ``new_id``: a version said since is placed between them."""
        return proposal(SupersedeProposal, scope=mem.scope, processor=self.name, cause=event,
                        supersession=Supersession(old_id=old_id, new_id=new_id, release=True,
                                                  reason=f"a version said before {new_id} is placed after {old_id}"))

    def _made(self, event: Event, reader: MemoryReader, mem: MemoryUnit, version: MemoryUnit,
              saying: Sequence[MemoryUnit], out: list[Proposal]) -> MemoryUnit | None:
        """The stored facet ``version`` (its supersession as stored), or, not stored yet, ``version`` made here
        (its upsert added to ``out``: governed later in this batch, history ingested or replayed, a correction
        before what it corrects); None for one retention forgot or an erasure took after it was last said
        (said again since, it is made again)."""
        stored = reader.get(mem.scope, version.memory_id)
        if stored is not None:
            return stored
        if reader.removed_since(mem.scope, version.memory_id, [a.memory_id for a in saying]):
            return None
        out.append(upsert_proposal(version, processor=self.name, cause=event))
        return version

    async def _version_step(self, event: Event, atom: MemoryUnit, previous: MemoryUnit,
                            facet: MemoryUnit, facet_key: str) -> Proposal:
        """``facet`` (of ``atom``'s statement) replaces ``previous``: superseded, or held for review when neither a
        model nor a correction cue says the value changed. Proposed in the scope of ``atom``, the newer version's
        first saying, whichever atom's governing placed the two (as time order, which governs the pair from the
        newer one, records the decision and puts its edge)."""
        decision = await self._should_supersede(atom, previous, facet)
        if decision is True:
            return proposal(SupersedeProposal, scope=atom.scope, processor=self.name, cause=event,
                            supersession=Supersession(old_id=previous.memory_id, new_id=facet.memory_id,
                                                      reason=f"new version of facet {facet_key!r}"))
        reason = decision if isinstance(decision, str) else "needs review"
        return proposal(
            HoldActionProposal, scope=atom.scope, processor=self.name, cause=event,
            held=HeldAction(
                action_id=held_supersede_id(previous.memory_id, facet.memory_id),
                action="supersede", target_ids=(previous.memory_id, facet.memory_id), reason=reason,
                inputs={"facet_key": facet_key, "old": previous.content, "new": facet.content},
            ),
        )

    async def _should_supersede(self, atom: MemoryUnit, old: MemoryUnit,
                                new: MemoryUnit) -> bool | str:
        if self._chat is not None:
            result = await self._chat.structured(ModelTask.GOVERNANCE, atom.scope, [
                {"role": "system", "content": "Decide whether the NEW persona facet replaces the OLD one "
                 "(same topic, changed value) rather than adding to it. Answer JSON {supersede, confidence, "
                 "reason}."},
                {"role": "user", "content": f"OLD: {old.content}\nNEW: {new.content}"},
            ], SupersedeRubric, sources=[atom.memory_id, old.memory_id, new.memory_id, *old.evidence, *new.evidence])
            r = result.value
            if r.supersede and r.confidence >= SUPERSEDE_MIN_CONFIDENCE:
                return True
            return f"model ({result.model}) did not supersede: confidence {r.confidence:.2f}; {r.reason}"
        if atom.attributes.get("correction"):
            return True
        return ("no model configured and no correction cue: both versions are kept and the supersede is "
                "held for review")

    def _scene(self, event: ChangeEvent, reader: MemoryReader, node_id: str) -> list[Proposal]:
        """The scene of a node a new (or strengthened) MENTIONS edge points to, from the atoms that mention it
        now. A message's mention recomputes it too: after an erasure or a forget, that is what rebuilds a scene
        from the atoms left (a scene recomputed unchanged is not sent: see the stage driver)."""
        node = reader.node(event.scope, node_id)
        if node is None or node["node_type"] not in ("Entity", "Time"):
            return []
        # the node's agent's scene (a review or an erasure may come from another agent's scope of the user)
        scope = event.scope.model_copy(update={"agent_id": node["agent_id"]})
        members = reader.scene_members(scope, node["node_id"], scene_text.MAX_ITEMS)
        sessions = scene_text.named(members.sessions)
        if len(members.sessions) < scene_text.MIN_SESSIONS:
            return []
        atoms = reader.get_many(scope, members.memory_ids)
        if not atoms:  # erased between the two reads (another process's writer): a later mention rebuilds it
            return []
        lines = [scene_text.member(a.session_id, a.kind.value, a.content) for a in atoms]
        scene = derived_memory(
            scope=scope, session_id=None, layer=Layer.L3, kind=Kind.SCENE,
            content=scene_text.render(node["name"], sessions, lines, len(members.sessions)),
            evidence=[a.memory_id for a in atoms], processor=self.name, method=Method.HEURISTIC,
            id_parts=[scope.path, "L3", node["node_id"]], valid_from=atoms[0].valid_from,
            attributes={"anchor": node["name"], "anchor_node_id": node["node_id"], "sessions": sessions,
                        **scene_text.counted(members.sessions)},
            # no source event: a scene is recomputed from every atom, whichever change triggered it
        )
        # after a review or an erasure, the scene may return to a version applied before (without a rejected
        # atom, then with it again): a proposal of that change's own
        return [upsert_proposal(scene, processor=self.name, cause=event, per_cause=event.op in _RECOMPUTING_OPS)]
