"""The write guard and erasure (trust and correction)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from altm.bus import Record
from altm.core import ChangeStatus, Kind, Layer, MemoryUnit, Method, Provenance, content_hash, partition_for
from altm.core.settings import Settings
from altm.pipeline.processors import upsert_proposal
from altm.pipeline.writer import Writer
from altm.pipeline.writer.guard import WriteGuard, matches
from altm.wiring import Deployment, open_deployment, replay_into
from tests.support.memories import embedded, running, runtime_of
from tests.support.rows import rows as _rows
from tests.support.turns import SCOPE, make_turn

ANTI = "Don't run the refund batch in one big transaction because it locks the invoices table; use chunks."



def test_matching_is_forgiving_both_ways() -> None:
    assert matches("We will run the refund batch in one big transaction tonight.",
                   "run the refund batch in one big transaction", 0.8)
    assert matches("refund batch in one transaction", "Run the refund batch in one big transaction!", 0.8)
    assert not matches("The refund job finished in 40 seconds.", "run the refund batch in one big transaction", 0.8)
    with pytest.raises(ValueError):
        WriteGuard(0)


def _derived(kind: Kind, content: str, evidence: str) -> MemoryUnit:
    layer = Layer.L1 if kind is Kind.CAPSULE else Layer.L2
    return MemoryUnit(memory_id=f"mem_{content_hash(content)[:32]}", scope=SCOPE, session_id="s1", layer=layer,
                      kind=kind, content=content, content_hash=content_hash(content), evidence=(evidence,),
                      provenance=Provenance(method=Method.HEURISTIC, processor="test"))


WRITER_PATHS = [("extract", Kind.DECISION), ("govern", Kind.FACT), ("fold", Kind.CAPSULE),
                ("lifecycle", Kind.HEURISTIC), ("api", Kind.PREFERENCE), ("cli", Kind.TASK),
                ("replay", Kind.OUTCOME)]


async def _writer_with(settings: Settings, turns: list[Any]) -> tuple[Deployment, Writer, str]:
    s = settings.model_copy(update={"embedder": "none"})
    deployment = await open_deployment(s, pipeline=True)
    await deployment.start()
    rt = runtime_of(deployment)
    await rt.publish(turns)
    await rt.run_until_idle()
    l0 = _rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' ORDER BY valid_from")[0]["memory_id"]
    return deployment, Writer(rt.shards, s), l0


def _apply(writer: Writer, mem: MemoryUnit, processor: str, offset: int) -> Any:
    from altm.core import encode

    prop = upsert_proposal(mem, processor=processor, cause=make_turn(1))
    record = Record("altm.proposals", partition_for(SCOPE.home, 4), offset, SCOPE.home, encode(prop))
    (change,) = writer.apply(record, 4).changes
    return change


@pytest.mark.parametrize(("processor", "kind"), WRITER_PATHS)
async def test_guard_refuses_anti_pattern_re_assertions_on_every_writer_path(
    settings: Settings, processor: str, kind: Kind
) -> None:
    d, writer, l0 = await _writer_with(settings, [make_turn(1, ANTI)])
    try:
        change = _apply(writer, _derived(kind, "Let's run the refund batch in one big transaction.", l0),
                        processor, 10_000)
        if kind is Kind.CAPSULE:  # held for review, not refused (see test_guard_order)
            assert change.status is ChangeStatus.COMMITTED and change.memory is not None
            assert change.memory.trust.status.value == "uncertain"
            reason = change.memory.trust.reason
        else:
            assert change.status is ChangeStatus.REJECTED
            reason = change.reason
        assert reason is not None and "re-asserts anti-pattern" in reason
        assert "it locks the invoices table" in reason
        ok = _derived(kind, "Instead of one big transaction, run the refund batch in chunks.", l0)
        assert _apply(writer, ok, processor, 10_001).status is ChangeStatus.COMMITTED  # negated: fine
    finally:
        await d.close()


@pytest.mark.parametrize(("processor", "kind"), WRITER_PATHS)
async def test_guard_refuses_erased_values_on_every_writer_path(settings: Settings, processor: str, kind: Kind
                                                                ) -> None:
    secret = "The vault master password is hunter2-blue-otter."
    d, writer, _ = await _writer_with(settings, [make_turn(1, "Something harmless to cite."),
                                                 make_turn(2, secret)])
    try:
        app, rt = d.app, runtime_of(d)
        (row,) = [r for r in app.list_memories(SCOPE, layer="L0") if r["content"] == secret]
        await app.erase(SCOPE, "memory", memory_id=row["memory_id"])
        await rt.run_until_idle()
        (kept,) = [r["memory_id"] for r in app.list_memories(SCOPE, layer="L0")]
        change = _apply(writer, _derived(kind, "the vault master password is hunter2-blue-otter", kept),
                        processor, 20_000)
        assert change.status is ChangeStatus.REJECTED
        assert change.reason is not None and "matches erased content" in change.reason
    finally:
        await d.close()


async def test_guard_fails_closed(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 3600.0})

    def broken(self: WriteGuard, shard: object, mem: object) -> None:
        raise RuntimeError("disk gone")

    async with running(s) as rt:
        monkeypatch.setattr(WriteGuard, "_tombstone", broken)
        await rt.publish([make_turn(1, "We decided to use Postgres.")])
        await rt.run_until_idle()
        assert _rows(s.data_dir, "SELECT * FROM memories") == []  # nothing accepted
        assert rt.work.count() >= 1  # kept for retry
        monkeypatch.undo()
        s2 = rt.work
        for row in _rows(s.data_dir, "SELECT work_id, partition FROM deferred_work"):  # make them due now
            rt.shards.get(row["partition"])._db.execute("UPDATE deferred_work SET next_attempt_at=0")
        await rt.run_until_idle()
        assert s2.count() == 0
        assert _rows(s.data_dir, "SELECT * FROM memories WHERE layer='L0'")


async def test_erasure_removes_content_everywhere_and_replay_cannot_undo_it(settings: Settings,
                                                                           tmp_path: Path) -> None:
    secret = "My passport number is X1234567 and I keep it in the blue drawer."
    async with embedded(settings) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "We decided to deploy on Tuesdays.", session="s1"),
                          make_turn(2, secret, session="s1"), make_turn(3, "Thanks, noted.", session="s1")])
        await rt.run_until_idle()
        app = d.app
        (row,) = [r for r in app.list_memories(SCOPE, layer="L0") if r["content"] == secret]
        before = app.search(SCOPE, "s1", "passport number blue drawer", preset_name="hybrid+graph").hits
        assert any("passport" in h.content for h in before)
        await app.erase(SCOPE, "memory", memory_id=row["memory_id"], reason="user request")
        await rt.run_until_idle()

        def assert_gone(data_dir: Path, deployment: Deployment) -> None:
            for table, col in (("memories", "content"), ("memories", "context")):
                assert not _rows(data_dir, f"SELECT 1 FROM {table} WHERE {col} LIKE '%passport%'")
            assert not _rows(data_dir, "SELECT 1 FROM memories_fts WHERE memories_fts MATCH 'passport'")
            assert not _rows(data_dir, "SELECT 1 FROM memories_fts_tri WHERE memories_fts_tri MATCH 'passport'")
            assert not _rows(data_dir, "SELECT 1 FROM graph_nodes WHERE name LIKE '%X1234567%'")
            assert not _rows(data_dir, "SELECT 1 FROM rejections WHERE payload LIKE '%passport%'")
            assert not _rows(data_dir, "SELECT 1 FROM audit_log WHERE old_value LIKE '%passport%' "
                                       "OR new_value LIKE '%passport%'")
            hits = deployment.app.search(SCOPE, "s1", "passport number blue drawer").hits
            assert not any("passport" in h.content for h in hits)
            vectors = deployment.vectors
            assert vectors is not None and vectors.count() == len(_rows(data_dir, "SELECT 1 FROM memories"))

        assert_gone(settings.data_dir, d)
        tombstones = _rows(settings.data_dir, "SELECT * FROM tombstones")
        assert tombstones and all(t["reason"].startswith("memory erased: user request") for t in tombstones)
        assert _rows(settings.data_dir, "SELECT 1 FROM audit_log WHERE action='erase' AND redacted=0")
        # the next message's context no longer holds the erased text
        (thanks,) = _rows(settings.data_dir, "SELECT context FROM memories WHERE content='Thanks, noted.'")
        assert thanks["context"] == "We decided to deploy on Tuesdays."
        # replay the whole log into the same store: the tombstones keep the content out
        await rt.rewind([p for p in ("capture", "control", "fold", "extract", "link", "verify", "govern", "embed")])
        await rt.run_until_idle()
        assert_gone(settings.data_dir, d)
        # the erased message, met again, is void: a rejection of it kept its text (in ``assert_gone`` too)
        assert _rows(settings.data_dir, "SELECT 1 FROM rejections") == []
    # replay into a fresh store honours the erasure recorded on the log
    fresh = tmp_path / "fresh"
    await replay_into(settings.data_dir, fresh)
    async with embedded(settings.model_copy(update={"data_dir": fresh})) as d2:
        assert_gone(fresh, d2)
        assert _rows(fresh, "SELECT 1 FROM memories WHERE content LIKE '%Tuesdays%'")


async def test_erasing_a_user_scope_removes_every_layer(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(i, f"I prefer option {i} for the deploy schedule.", session=f"s{i}")
                          for i in range(3)])
        await rt.run_until_idle()
        assert len({r["layer"] for r in _rows(s.data_dir, "SELECT layer FROM memories")}) >= 3
        await d.app.erase(SCOPE, "user", reason="account deleted")
        await rt.run_until_idle()
        assert _rows(s.data_dir, "SELECT * FROM memories") == []
        assert _rows(s.data_dir, "SELECT * FROM graph_edges") == []
        assert json.loads(_rows(s.data_dir, "SELECT old_value FROM audit_log WHERE action='erase' LIMIT 1")[0][
            "old_value"])["content"]["redacted_sha256"]


async def test_sweep_verifies_rows_nobody_read(settings: Settings) -> None:
    from altm.app.stats import collect_stats
    from altm.pipeline.processors import CaptureProcessor, ExtractProcessor, SweepProcessor

    s = settings.model_copy(update={"embedder": "none"})
    # no verify stage: only the sweep (a control event on the log) verifies these atoms
    async with embedded(s, processors=[CaptureProcessor(), ExtractProcessor(), SweepProcessor()]) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "The deadline is December 15.", session="a"),
                          make_turn(2, "Actually the deadline moved to January 10, not December 15.", session="b")])
        await rt.run_until_idle()
        assert collect_stats(s.data_dir)["verified_fraction"] == 0.0
        swept = await d.app.admin.sweep()
        await rt.run_until_idle()
        assert swept == 2
        assert collect_stats(s.data_dir)["verified_fraction"] == 1.0
        statuses = {r["content"]: r["trust_status"] for r in _rows(s.data_dir, "SELECT * FROM memories "
                                                                               "WHERE layer='L2'")}
        assert statuses["The deadline is December 15."] == "contradicted"  # found without any read
        assert await d.app.admin.sweep() == 0  # nothing left to verify
