"""From the review of capsules that cite what they quote: erasing a message the capsule does not cite no longer
reached the capsule, which stayed, still counting the erased message ("3 messages" with 2 left) and so showing
it had been there. Erasing any message of a session erases the session's capsule, as when capsules cited every
message, and fold folds it again at once from what is left (as a replay without the erased message does)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from altm.core import Role, Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TURNS = [make_turn(1, "Hello, how are you today?"),
         make_turn(2, "We decided to move the billing service to Postgres."),
         make_turn(3, "Haha, that is a great picture of my dog Rex.", role=Role.USER)]


def _capsule(data_dir: Path) -> tuple[str, dict[str, Any], list[str]] | None:
    found = rows(data_dir, "SELECT content, attributes, evidence FROM memories WHERE layer='L1'")
    if not found:
        return None
    (r,) = found
    return str(r["content"]), orjson.loads(r["attributes"]), orjson.loads(r["evidence"])


async def test_erasing_a_message_the_capsule_does_not_cite_leaves_no_capsule_counting_it(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (rt, app):
        messages = {str(r["content"]): str(r["memory_id"]) for r in rows(
            s.data_dir, "SELECT content, memory_id FROM memories WHERE layer='L0'")}
        dog = messages[TURNS[2].content]
        capsule = _capsule(s.data_dir)
        assert capsule is not None and "(3 messages" in capsule[0]
        assert dog not in capsule[2]  # not cited: it gives the capsule nothing
        await app.erase(SCOPE, "memory", memory_id=dog)
        await rt.run_until_idle()
        assert rows(s.data_dir, f"SELECT 1 FROM memories WHERE memory_id='{dog}'") == []
        folded = _capsule(s.data_dir)  # on the first version: "3 messages", turns 3
        assert folded is not None and "(2 messages" in folded[0] and folded[1]["turns"] == 2
        assert dog not in folded[2]
        await rt.publish([make_turn(4, "Actually, the deadline is March 3.")])
        await rt.run_until_idle()
        again = _capsule(s.data_dir)
    assert again is not None and "(3 messages" in again[0] and again[1]["turns"] == 3  # t1, t2 and t4
    assert dog not in again[2]


async def test_a_replay_after_erasing_one_message_rebuilds_the_same_state(settings: Settings, tmp_path: Path) -> None:
    """From the review of the capsule change: the source erased the session's capsule with the message and
    folded none until the session's next message, while a replay (the erasure's records no longer open, so
    the message never arrives) folded a capsule from the messages left: the two states differed."""
    from altm.wiring import replay_into, state_hash

    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        messages = {str(r["content"]): str(r["memory_id"]) for r in rows(
            s.data_dir, "SELECT content, memory_id FROM memories WHERE layer='L0'")}
        await app.erase(SCOPE, "memory", memory_id=messages[TURNS[2].content])
        await rt.run_until_idle()
    target = tmp_path / "replayed"
    await replay_into(s.data_dir, target, settings=s)
    capsules = [_capsule(d) for d in (s.data_dir, target)]
    assert capsules[0] == capsules[1]
    assert state_hash(s.data_dir) == state_hash(target)
    for data_dir in (s.data_dir, target):  # the replay met the erased message itself: void, not a rejection
        assert rows(data_dir, "SELECT 1 FROM rejections") == []
        assert rows(data_dir, "SELECT 1 FROM memories WHERE content LIKE '%dog Rex%'") == []


async def test_a_refused_capsule_of_an_erased_session_keeps_none_of_its_text(settings: Settings) -> None:
    """Found with the capsule folded again after an erasure: the session's other messages repeat the erased
    one's secret, so the guard refuses the capsule quoting them, and the rejection keeps the capsule's text.
    Erasing the session then left that text in the rejections table: only rejections *of* an erased memory were
    scrubbed, and the capsule was never stored. A rejection of a memory citing an erased one goes too (it was
    redacted in place before; a replay never meets it: test_erasure_refusals.py)."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    secret = "ZEBRA-4471-SECRET"
    said = [make_turn(1, f"My vault code is {secret}, keep it.", session="s-secret"),
            make_turn(2, f"I prefer that {secret} is rotated monthly.", session="s-secret"),
            make_turn(3, f"We decided that {secret} goes into the Vault service.", session="s-secret")]
    async with store_with(s, said) as (rt, app):
        (second,) = [str(r["memory_id"]) for r in rows(
            s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content LIKE '%rotated monthly%'")]
        await app.erase(SCOPE, "memory", memory_id=second)
        await rt.run_until_idle()
        # folds it again, adding nothing of its own: every statement quotes the secret, so it is refused whole
        # (one with a statement of its own would be stored without those: test_erasure_capsule_statements.py)
        await rt.publish([make_turn(4, "Okay, thanks.", session="s-secret")])
        await rt.run_until_idle()
        refused = rows(s.data_dir, "SELECT payload FROM rejections")
        assert refused and all(secret in str(r["payload"]) for r in refused)  # the capsule, for review
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        after = rows(s.data_dir, "SELECT payload FROM rejections")
    assert after == []
    erased = rows(s.data_dir, "SELECT 1 FROM audit_log WHERE target_table='rejections' AND action='erase'")
    assert len(erased) >= len(refused)  # each deletion audited
    assert not any(secret in str(r) for r in rows(s.data_dir, "SELECT old_value FROM audit_log "
                                                              "WHERE target_table='rejections'"))
