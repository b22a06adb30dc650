"""A turn id holding a NUL character keeps its natural place in conversation order (review of schema 26, rt23):
``turn_key`` joined the natural turn id and the role's rank with a NUL, so turn "a\\x00" (a user's) sorted before
turn "a" (an assistant's) at one time, where the order is time, natural turn id, then role: "a" first. The writer
linked the wrong context and recall's neighbours followed. ``TurnId`` takes any 1-256 characters."""

from __future__ import annotations

import sqlite3

from altm.core import Role, Settings, TurnEvent
from altm.store._conversation import turn_key
from tests.support.memories import store_with
from tests.support.turns import SCOPE, T0


async def test_turn_id_with_nul_context_in_natural_order(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [TurnEvent(scope=SCOPE, session_id="s1", turn_id="a", role=Role.ASSISTANT, content="Reply to a.",
                       timestamp=T0),
             TurnEvent(scope=SCOPE, session_id="s1", turn_id="a\x00", role=Role.USER, content="Question b.",
                       timestamp=T0)]
    async with store_with(s, turns):
        pass
    context: dict[str, str | None] = {}
    for path in s.data_dir.rglob("shard-*.db"):
        with sqlite3.connect(path) as db:
            context |= dict(db.execute("SELECT content, context FROM memories WHERE layer='L0'"))
    # conversation order: time, natural turn id ("a" < "a\x00"), then role: turn "a" comes first
    assert context == {"Reply to a.": None, "Question b.": "Reply to a."}


def test_turn_keys_compare_as_their_turn_ids_then_roles() -> None:
    turns = ["a", "a\x00", "a\x00\x00", "a\x00\x01", "a\x01", "a1", "a2", "a10", "b", ""]
    roles = ["user", "assistant", None]
    pairs = [(t, r) for t in turns for r in roles]
    rank = {"user": 0, "assistant": 1, None: 2}
    from altm.core import natural_key

    by_tuple = sorted(pairs, key=lambda p: (natural_key(p[0]), rank[p[1]]))
    by_key = sorted(pairs, key=lambda p: turn_key(p[0], p[1]))
    assert by_key == by_tuple
