"""Found by the randomized replay check (seed 158): a message erased in one session and then said again, word
for word, in another is refused by the guard (a restatement of erased content), and the rejection keeps the
refused message, its text, for review. Erasing that second session left the rejection, and the erased text,
in the source: the refused message was never stored, so no memory id of the erasure named it. A replay cannot
open the erased session's records and never meets the re-send: it had no such rejection. A session's (an
agent's, a user's) erasure now takes the rejections of what that session sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "The staging cluster runs on Kubernetes 1.30 in Dublin."
REFUSED = "SELECT rejection_id, reason, payload FROM rejections WHERE instr(payload, ?) > 0"


@pytest.mark.parametrize("second", ["session", "agent"])
async def test_erasing_the_session_of_a_refused_resend_takes_its_rejection(settings: Settings, tmp_path: Path,
                                                                          second: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, SAID, session="s2"), make_turn(2, "The release is on Friday.", session="s1")]
    async with store_with(s, turns) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        await rt.publish([make_turn(3, SAID, session="s1")])  # the erased text, word for word
        await rt.run_until_idle()
        refused = rows(s.data_dir, REFUSED, (SAID,))
        assert refused and all("erased" in str(r["reason"]) for r in refused)  # kept for review, with its text
        if second == "session":
            await app.erase(SCOPE, "session", session_id="s1")
        else:
            await app.erase(SCOPE, "agent")
        await rt.run_until_idle()
    assert rows(s.data_dir, REFUSED, (SAID,)) == []
    audited = rows(s.data_dir, "SELECT old_value FROM audit_log WHERE target_table='rejections' AND action='erase'")
    assert len(audited) >= len(refused) and not any(SAID in str(r["old_value"]) for r in audited)
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_refused_resend_of_another_session_stays_for_review(settings: Settings) -> None:
    """Erasing a session the refused message was not sent in leaves its rejection."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, SAID, session="s2"), make_turn(2, "The release is on Friday.", session="s3")]
    async with store_with(s, turns) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        await rt.publish([make_turn(3, SAID, session="s1")])
        await rt.run_until_idle()
        refused = rows(s.data_dir, REFUSED, (SAID,))
        assert refused
        await app.erase(SCOPE, "session", session_id="s3")
        await rt.run_until_idle()
    assert rows(s.data_dir, REFUSED, (SAID,)) == refused
