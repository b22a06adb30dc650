"""From the review of capsules that cite what they quote: erasing a message the capsule does not cite no longer
reached the capsule, which stayed, still counting the erased message ("3 messages" with 2 left) and so showing
it had been there. Erasing any message of a session erases the session's capsule, as when capsules cited every
message; the session's next message folds it again from what is left."""

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
        assert _capsule(s.data_dir) is None  # on the first version: "3 messages", turns 3
        await rt.publish([make_turn(4, "Actually, the deadline is March 3.")])
        await rt.run_until_idle()
        again = _capsule(s.data_dir)
    assert again is not None and "(3 messages" in again[0] and again[1]["turns"] == 3  # t1, t2 and t4
    assert dog not in again[2]
