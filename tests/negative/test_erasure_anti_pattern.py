"""An erased anti-pattern stops guarding. The guard refused (or held for review) what re-asserted an
anti-pattern stated in another session; erasing that session (or the anti-pattern itself) left the refusal and
the hold in place, their reasons quoting the erased anti-pattern ("'use PostgreSQL for billing': it loses
data"), while a replay, which cannot open the erased session, never met the anti-pattern and stored what
re-asserted it, unflagged. The erasure applies again what the erased anti-pattern alone refused, and lifts its
holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ANTI = "Never use PostgreSQL for billing because it loses data."
OTHER = "Never use PostgreSQL for billing in production because the backups fail."
REASSERT = "We decided to use PostgreSQL for billing in production."
QUOTING = ("SELECT 'memory' AS kind, layer, trust_reason AS reason FROM memories "
           "WHERE trust_reason LIKE '%loses data%' "
           "UNION ALL SELECT 'rejection', memory_id, reason FROM rejections WHERE reason LIKE '%loses data%'")
DECISION = "SELECT content FROM memories WHERE layer='L2' AND kind='decision'"
HELD = "SELECT layer FROM memories WHERE trust_status='uncertain'"


@pytest.mark.parametrize("erased", ["session", "memory"])
async def test_erasing_an_anti_pattern_applies_what_it_alone_refused(settings: Settings, tmp_path: Path,
                                                                     erased: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        runtime = runtime_of(deployment)
        await runtime.publish([make_turn(1, ANTI, session="s0")])
        await runtime.run_until_idle()
        await runtime.publish([make_turn(2, REASSERT, session="s1")])
        await runtime.run_until_idle()
        assert sorted(r["kind"] for r in rows(s.data_dir, QUOTING)) == ["memory", "rejection"]  # held, refused
        assert rows(s.data_dir, DECISION) == []
        if erased == "session":
            await deployment.app.erase(SCOPE, "session", session_id="s0")
        else:
            (anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
            await deployment.app.erase(SCOPE, "memory", memory_id=anti["memory_id"])
        await runtime.run_until_idle()
    assert rows(s.data_dir, QUOTING) == []
    assert [r["content"] for r in rows(s.data_dir, DECISION)] and rows(s.data_dir, HELD) == []
    assert rows(s.data_dir, "SELECT 1 FROM rejections") == []
    if erased == "session":
        await replayed_equal(s, tmp_path / "replayed")


async def test_refused_again_by_another_anti_pattern_the_rejection_gives_that_reason(settings: Settings,
                                                                                    tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        runtime = runtime_of(deployment)
        await runtime.publish([make_turn(1, ANTI, session="s0"), make_turn(2, OTHER, session="s2")])
        await runtime.run_until_idle()
        await runtime.publish([make_turn(3, REASSERT, session="s1")])
        await runtime.run_until_idle()
        before = rows(s.data_dir, "SELECT memory_id, reason FROM rejections")
        assert before and all("loses data" in r["reason"] for r in before), before
        await deployment.app.erase(SCOPE, "session", session_id="s0")
        await runtime.run_until_idle()
    assert rows(s.data_dir, QUOTING) == []
    after = rows(s.data_dir, "SELECT memory_id, reason FROM rejections")
    assert [r["memory_id"] for r in after] == [r["memory_id"] for r in before]
    assert all("backups fail" in r["reason"] for r in after), after
    assert rows(s.data_dir, DECISION) == []
    await replayed_equal(s, tmp_path / "replayed")
