"""Found by the randomized replay check (seed 325): a session capsule that matches erased content is refused
each time the session is folded again, and each refused version left a rejection of its own. How many
versions there were depends on how the session's messages were batched (a fold per message live, fewer in a
replay, which reads the log in larger steps), so the rejections table of a replay differed from its source.
A capsule (like a scene) is recomputed whole from its session: its latest judged version is the one that
counts, so a refusal replaces the pending rejections of its earlier versions."""

from __future__ import annotations

from pathlib import Path

from altm.core import Scope, Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

CODER = SCOPE
REVIEWER = Scope(tenant_id=SCOPE.tenant_id, workspace_id=SCOPE.workspace_id, user_id=SCOPE.user_id,
                 agent_id="reviewer")
ERASED = "I prefer pickle for the session cache, it is simpler."
# every statement of the capsule matches the erased text, in each version: a capsule with statements of its
# own is stored without the matching ones instead (tests/negative/test_erasure_capsule_statements.py)
SESSION = ["Never use pickle for the session cache, it broke the last release.",  # matches the erased text
           "Noted.", "Thanks.", "Sure."]


async def _rejections(settings: Settings, base: Path, name: str, session: list[str], step: int
                      ) -> list[tuple[str, ...]]:
    """The capsule rejections after the coder's erasure and the reviewer's ``session``, ``step`` messages at a
    time (each step derived before the next)."""
    s = settings.model_copy(update={"embedder": "none", "data_dir": base / name})
    async with store_with(s, [make_turn(1, ERASED, scope=CODER, session="s0")]) as (rt, app):
        await app.erase(CODER, "agent")
        await rt.run_until_idle()
        turns = [make_turn(10 + i, text, scope=REVIEWER, session="s1") for i, text in enumerate(session)]
        for at in range(0, len(turns), step):
            await rt.publish(turns[at:at + step])
            await rt.run_until_idle()
    return [(r["proposal_id"], r["memory_id"], r["reason"]) for r in rows(
        s.data_dir, "SELECT proposal_id, memory_id, reason FROM rejections WHERE payload LIKE '%\"kind\":\"capsule\"%' "
        "ORDER BY proposal_id")]


async def test_a_refused_capsule_leaves_one_rejection_however_its_session_was_batched(
        settings: Settings, tmp_path: Path) -> None:
    one_by_one = await _rejections(settings, tmp_path, "live", SESSION, 1)
    in_one_step = await _rejections(settings, tmp_path, "replay", SESSION, len(SESSION))
    assert len(one_by_one) == 1, one_by_one  # the latest refused version only
    assert one_by_one == in_one_step

