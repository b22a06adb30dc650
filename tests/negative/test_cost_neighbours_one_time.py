"""The conversational neighbours of a recalled message read its whole session when the session's messages share
one time: every read of the ``conversation`` preset is linear in the session's length.

``SearchQueries.session_neighbours`` (altm/store/_search.py:207-220) calls ``_conversation.neighbours``
(altm/store/_conversation.py:65-68, 73-77) for each of the 3 seeds and both directions, which first reads
``SELECT * FROM memories WHERE <session> AND valid_from IS ?`` (every message at the anchor's time) and orders
them in Python by ``conversation_key`` (a ``natural_key`` of the turn id per row). A host that knows only when a
session happened sends every message with that time (the case ``_conversation`` was written for; LoCoMo ingest
does it), so the whole session is read and sorted 6 times per read. Measured (red team rt21), one session of
1,000 / 4,000 messages at one time: median 68 / 273-278 ms a read (p95 71 / 276-343 ms), the fusion
step 64 / 258-275 ms of it; the default preset on the same session: 5 / 9 ms.

Expected: the neighbours of a message are found by an index range (a bounded number of rows per seed)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from altm.core import Role, Settings, TurnEvent
from altm.store import _conversation
from tests.support.memories import store_with
from tests.support.turns import SCOPE, T0


def _session(n: int) -> list[TurnEvent]:
    said = T0 + timedelta(days=3)  # one time for the whole session
    return [TurnEvent(scope=SCOPE, session_id="s1", turn_id=f"s1-t{i}",
                      role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
                      content=("The zanzibar offsite is booked." if i in (5, n // 2, n - 5) else f"Filler line {i}."),
                      timestamp=said) for i in range(n)]


async def _keys_computed(settings: Settings, n: int, monkeypatch: pytest.MonkeyPatch) -> int:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir / f"n{n}"})
    async with store_with(s, _session(n)) as (_rt, app):
        calls = [0]
        original = _conversation.conversation_key

        def counting(row):  # type: ignore[no-untyped-def]
            calls[0] += 1
            return original(row)

        monkeypatch.setattr(_conversation, "conversation_key", counting)
        hits = app.search(SCOPE, "s1", "Where is the zanzibar offsite?", preset_name="conversation").hits
        monkeypatch.setattr(_conversation, "conversation_key", original)
    assert any("zanzibar" in h.content for h in hits)
    return calls[0]


async def test_neighbours_read_a_bounded_part_of_a_long_session(settings: Settings,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    short, long = (await _keys_computed(settings, 60, monkeypatch),
                   await _keys_computed(settings, 480, monkeypatch))
    assert long <= 2 * short, (
        f"one recall ordered {short} → {long} messages for a session of 60 → 480 messages at one time: the "
        "neighbours channel reads and sorts the whole session for each seed")
