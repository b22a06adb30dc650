"""Found by the randomized replay check with overlapping operations (seed 52): a session capsule erased by its
id while a new message of its session was on its way. The source captured the message, applied the erasure,
then folded the session again: a new capsule under the erased one's id, with the erased summary's sentences
in it. A replay folded first and erased after: no capsule. Which one a deployment ends with depended on
timing, and the erased summary came back whenever the fold came last. A memory recomputed whole (a session
capsule, a scene) that was erased by its id is not recomputed again: the fold or the scene that would make
it is void, whichever order the erasure and the new message take."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = [make_turn(1, "The staging cluster runs on Kubernetes 1.30 in Dublin."),
        make_turn(2, "We decided to move the billing service to Postgres.")]
LATER = make_turn(3, "Always run the migrations before the billing deploy.")


async def test_an_erased_capsule_is_not_folded_again_by_a_later_message(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, SAID) as (rt, app):
        (capsule,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L1'")
        await app.erase(SCOPE, "memory", memory_id=str(capsule["memory_id"]))
        await rt.run_until_idle()
        await rt.publish([LATER])
        await rt.run_until_idle()
        assert len(rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L0'")) == 3  # the message is stored
    assert rows(s.data_dir, "SELECT content FROM memories WHERE memory_id=?", (capsule["memory_id"],)) == []
    assert rows(s.data_dir, "SELECT 1 FROM rejections WHERE memory_id=?", (capsule["memory_id"],)) == []  # void
    await replayed_equal(s, tmp_path / "replayed")


async def test_after_a_session_erasure_the_session_folds_anew(settings: Settings) -> None:
    """An erasure of the whole session is no erasure of the capsule by its id: messages sent to the same session
    afterwards get a capsule of their own."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, SAID) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        await rt.publish([LATER])
        await rt.run_until_idle()
    (capsule,) = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L1'")
    assert "billing deploy" in str(capsule["content"]) and "Kubernetes" not in str(capsule["content"])
