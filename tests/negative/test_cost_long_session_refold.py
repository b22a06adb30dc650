"""A long session is folded again after each batch by classifying every message of it that gives the capsule
something: quadratic in the session's length.

Red team rt20 (scaling): one session, each turn derived before the next (as prepare/commit delivers them), each
message holding a number or a date ("We paid 17 dollars for item 17 on 2024-03-18."): 100 / 400 turns took
1.4 s / 11.4 s, and the 400 turns classified 80,200 messages (n(n+1)/2). ``FoldProcessor._fold``
(altm/pipeline/processors/fold.py:231) reads and decodes the whole session (``session_read``) and
``capsule_sections`` (fold.py:137-140) runs ``_sections_of`` on every message not known to be silent; only
messages giving nothing are remembered (``SilentMessages``), so a session whose messages carry a number, a date,
a path, a question or a decision is classified whole on every fold. A 2,000-turn session: ~2 million
classifications."""

from __future__ import annotations

import pytest

from altm.core import Role, Settings
from altm.pipeline.processors import fold
from tests.support.memories import running
from tests.support.turns import make_turn

TURNS = 120


async def test_each_message_is_classified_a_bounded_number_of_times(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    original = fold._sections_of

    def counting(msg):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return original(msg)

    monkeypatch.setattr(fold, "_sections_of", counting)
    s = settings.model_copy(update={"embedder": "none"})
    async with running(s) as rt:
        for i in range(TURNS):
            role = Role.USER if i % 2 == 0 else Role.ASSISTANT
            await rt.publish([make_turn(i, f"We paid {i} dollars for item {i} on 2024-03-{1 + i % 28:02d}.",
                                        session="s1", role=role)])
            await rt.run_until_idle()
    assert calls["n"] >= TURNS  # every message was read once at least
    assert calls["n"] <= 3 * TURNS, (
        f"{calls['n']} messages classified to fold a {TURNS}-message session (one fold per turn): every fold "
        "classifies the whole session again")
