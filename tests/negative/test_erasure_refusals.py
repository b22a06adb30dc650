"""Found by a randomized replay check: what the write guard refused in a session that is erased later stayed
as rejections (their payloads redacted, pending review), while a replay, which cannot open the erased
session's records, has none: another state than the source's, and review items nobody can act on."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


@pytest.mark.parametrize("target", ["session", "user"])
async def test_refusals_of_a_session_erased_later_go_with_it(settings: Settings, tmp_path: Path,
                                                            target: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    anti = make_turn(1, "Never use SQLite for the analytics warehouse.", session="s2")
    async with store_with(s, [anti]) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "We decided to use SQLite for the analytics warehouse.", session="s1")])
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM rejections") != []  # what s1 derived matches erased content
        await app.erase(SCOPE, target, session_id="s1" if target == "session" else None)
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM rejections") == []
    await replayed_equal(s, tmp_path / "replayed")
