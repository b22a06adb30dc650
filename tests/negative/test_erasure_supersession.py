"""Found by a randomized replay check: the same decision said in s1 and then in s2 gives two atoms, and govern
merges the later one into the earlier (the canonical). Erasing s1 erased the canonical and left s2's atom
merged into it (`lc_state` merged, `superseded_by` an erased id): out of recall for good, while a replay, which
never meets s1's records, keeps it active."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

DECISION = "We decided to deploy the billing service on Tuesdays."


async def test_a_memory_merged_into_an_erased_one_is_released(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, DECISION, session="s1"), make_turn(2, DECISION, session="s2")]) as (rt, app):
        merged = rows(s.data_dir, "SELECT session_id FROM memories WHERE layer='L2' AND lc_state='merged'")
        assert [r["session_id"] for r in merged] == ["s2"]
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    left = rows(s.data_dir, "SELECT lc_state, superseded_by FROM memories WHERE layer='L2' AND session_id='s2'")
    assert left == [{"lc_state": "active", "superseded_by": None}]
    await replayed_equal(s, tmp_path / "replayed")
