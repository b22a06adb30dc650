"""Found by a randomized replay check: govern merges the same statement said in two sessions into one atom
that cites both messages. Erasing the later session erases that atom (its evidence holds the erased message).
A replay cannot open the erased session's records: it derived the atom again from the other session alone, the
erasure met nothing of it there, and the replay kept an atom the source had erased (so did a persona facet
built on such an atom, across agents). The erasure's tombstones name the memories it erased: a replay erases
those it derived again."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "The staging cluster runs on Kubernetes 1.30 in Dublin."
ATOMS = "SELECT memory_id, session_id, evidence FROM memories WHERE layer='L2' AND content=? AND superseded_by IS NULL"


@pytest.mark.parametrize("erased", ["s1", "s2"])
async def test_an_atom_said_in_two_sessions_is_erased_alike_in_a_replay(settings: Settings, tmp_path: Path,
                                                                         erased: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, SAID, session="s1"), make_turn(2, "The release is on Friday.", session="s2"),
             make_turn(3, SAID, session="s2")]
    async with store_with(s, turns) as (rt, app):
        merged = rows(s.data_dir, ATOMS, (SAID,))
        assert len(merged) == 1 and len(merged[0]["evidence"].split(",")) == 2  # one atom citing both messages
        await app.erase(SCOPE, "session", session_id=erased)
        await rt.run_until_idle()
    left = rows(s.data_dir, ATOMS, (SAID,))
    assert [r["session_id"] for r in left] == (["s2"] if erased == "s1" else [])  # the duplicate is released
    target = await replayed_equal(s, tmp_path / "replayed")
    assert rows(target, ATOMS, (SAID,)) == left
