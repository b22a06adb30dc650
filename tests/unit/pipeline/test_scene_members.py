"""A scene's members come from one SQL scan of two columns per atom (issue 13): recomputing the scene of a node
that thousands of atoms mention builds the dozen memories the scene shows, not one memory per atom. On a long
history (every decision "by Friday") govern rebuilt every mentioning atom for every new mention, quadratic in the
history: 2,000 such turns did not finish in 27 minutes. The scenes are the same as those computed from every
atom."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from altm.core import (
    ChangeEvent,
    ChangeStatus,
    MemoryUnit,
    ProposalOp,
    Role,
    Scope,
    TurnEvent,
    UpsertMemoryProposal,
)
from altm.core.scene import MAX_ITEMS as SCENE_MAX_ITEMS
from altm.core.scene import MIN_SESSIONS as SCENE_MIN_SESSIONS
from altm.core.settings import Settings
from altm.pipeline.processors import GovernProcessor, ProcessorContext
from altm.store import MEMORY_COLUMNS, MemoryReader, ShardSet, row_to_memory
from altm.store import _reader as reader_module
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _turns(n: int) -> list[TurnEvent]:
    """Decisions that all name Friday, ten per session; every 7th repeats an earlier one word for word."""
    return [
        TurnEvent(scope=SCOPE, session_id=f"s{i // 10:02d}", turn_id=f"t{i}", role=Role.USER,
                  content=(f"We decided to move service {i % 17} to region {i % 5} by Friday."
                           if i % 7 else "We decided to move service 3 to region 3 by Friday."),
                  timestamp=T0 + timedelta(minutes=i))
        for i in range(n)
    ]


def _every_atom(reader: MemoryReader, node_id: str) -> list[MemoryUnit]:
    """The atoms mentioning ``node_id``, every one built (what govern read before)."""
    shard = reader.shards.get(0)  # the store has one partition
    cols = ", ".join("m." + c for c in MEMORY_COLUMNS)
    return [row_to_memory(r) for r in shard._db.execute(
        f"SELECT {cols} FROM memories m JOIN graph_edges e ON e.src_id = m.memory_id AND e.edge_type='MENTIONS' "
        "AND e.rejected=0 WHERE e.dst_id=? AND m.layer='L2'", [node_id])]


def _expected(atoms: list[MemoryUnit]) -> tuple[list[str], list[str]]:
    """The scene's sessions and first atoms, computed from every atom as govern did before."""
    def order(m: MemoryUnit) -> tuple[str, str]:
        return (m.valid_from.isoformat() if m.valid_from else "", m.memory_id)
    unique: dict[tuple[str, str], MemoryUnit] = {}
    for atom in sorted(atoms, key=order):
        unique.setdefault((atom.kind.value, atom.content_hash), atom)
    firsts = sorted(unique.values(), key=order)
    return sorted({a.session_id or "" for a in firsts}), [a.memory_id for a in firsts[:SCENE_MAX_ITEMS]]


@pytest.fixture
async def store(settings: Settings, tmp_path: Path) -> Path:
    s = settings.model_copy(update={"data_dir": tmp_path / "d", "embedder": "none", "partitions": 1})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish(_turns(120))
        await rt.run_until_idle()
    return s.data_dir


def _nodes(data_dir: Path) -> list[tuple[str, str]]:
    return [(r["node_id"], r["name"]) for r in rows(
        data_dir, "SELECT node_id, name FROM graph_nodes WHERE node_type IN ('Entity', 'Time')")]


def test_scene_members_are_those_of_every_atom(store: Path) -> None:
    shards = ShardSet(store, 1)
    try:
        reader = MemoryReader(shards)
        nodes = _nodes(store)
        friday = [node_id for node_id, name in nodes if name.lower() == "friday"]
        assert friday, nodes
        checked = 0
        for node_id, _name in nodes:
            atoms = _every_atom(reader, node_id)
            sessions, firsts = _expected(atoms)
            members = reader.scene_members(SCOPE, node_id, SCENE_MAX_ITEMS)
            assert (members.sessions, members.memory_ids) == (sessions, firsts), node_id
            checked += len(atoms) > SCENE_MAX_ITEMS
        assert checked  # some node is mentioned by more atoms than a scene shows
        (hot,) = friday
        assert len(_every_atom(reader, hot)) > 50
        scene = rows(store, "SELECT content, evidence FROM memories WHERE layer='L3' AND "
                            "json_extract(attributes, '$.anchor_node_id') = ?", (hot,))
        assert len(scene) == 1
        sessions, firsts = _expected(_every_atom(reader, hot))
        assert len(sessions) >= SCENE_MIN_SESSIONS
        assert f"across sessions {', '.join(sessions)}" in scene[0]["content"]
        assert all(memory_id in scene[0]["evidence"] for memory_id in firsts)
    finally:
        shards.close()


async def test_a_scene_of_a_node_mentioned_by_many_atoms_builds_only_the_atoms_it_shows(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shards = ShardSet(store, 1)
    try:
        reader = MemoryReader(shards)
        (hot,) = [node_id for node_id, name in _nodes(store) if name.lower() == "friday"]
        mentioning = len(_every_atom(reader, hot))
        built = 0

        def counted(row: object) -> MemoryUnit:
            nonlocal built
            built += 1
            return row_to_memory(row)  # type: ignore[arg-type]

        monkeypatch.setattr(reader_module, "row_to_memory", counted)
        change = ChangeEvent(scope=SCOPE, proposal_id="prop_1", op=ProposalOp.LINK_MEMORY,
                             status=ChangeStatus.COMMITTED, memory_id="mem_x", mentioned_ids=(hot,),
                             event_id="chg_1", timestamp=T0)
        (scene,) = await GovernProcessor().process(change, ProcessorContext(settings=Settings(), reader=reader))
        assert isinstance(scene, UpsertMemoryProposal)
        assert len(scene.memory.evidence) == SCENE_MAX_ITEMS
        assert built <= SCENE_MAX_ITEMS < mentioning // 4  # before: every one of the mentioning atoms
    finally:
        shards.close()


async def test_a_batch_computes_the_scene_of_each_node_once_and_proposes_what_each_change_would_have(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Govern computed a node's scene for every change of a batch that named it (a replay of 500 LoCoMo turns:
    3,184 scenes for 778 distinct per batch). Batched, each node's scene is read once, at the first change
    naming it, and the proposals are those the changes one by one proposed, less the repeats the driver
    would not send, with the same causes, in the same order."""
    shards = ShardSet(store, 1)
    try:
        reader = MemoryReader(shards)
        nodes = [node_id for node_id, _ in _nodes(store)]
        changes = [ChangeEvent(scope=SCOPE, proposal_id=f"prop_{i}", op=ProposalOp.LINK_MEMORY,
                               status=ChangeStatus.COMMITTED, memory_id=f"mem_{i}",
                               mentioned_ids=(nodes[0], nodes[i % len(nodes)]), event_id=f"chg_{i}", timestamp=T0)
                   for i in range(30)]
        ctx = ProcessorContext(settings=Settings(), reader=reader)
        one_by_one = [p for change in changes for p in await GovernProcessor().process(change, ctx)]
        read: list[str] = []
        members = MemoryReader.scene_members

        def counted(self: MemoryReader, scope: Scope, node_id: str, limit: int) -> object:
            read.append(node_id)
            return members(self, scope, node_id, limit)

        monkeypatch.setattr(MemoryReader, "scene_members", counted)
        batched = await GovernProcessor().process_batch(changes, ctx)
        assert batched is not None
        assert sorted(read) == sorted(set(read)) and set(read) == {c for ch in changes for c in ch.mentioned_ids}
        assert len(one_by_one) > len(batched) > 0
        sent_once: dict[str, UpsertMemoryProposal] = {}  # what the driver sends of the changes one by one
        for p in one_by_one:
            assert isinstance(p, UpsertMemoryProposal)
            sent_once.setdefault(p.event_id, p)
        assert [(p.event_id, p.cause_event_id) for p in batched] == [
            (p.event_id, p.cause_event_id) for p in sent_once.values()]  # the same, in the same order
    finally:
        shards.close()
