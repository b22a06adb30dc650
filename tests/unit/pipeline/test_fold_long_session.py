"""A long session was folded at a cost that grew with its length: its capsule is made again after each batch
of its messages, and every message of the session was classified again each time (a 2,000-turn session,
published 20 turns at a time: 88,822 sentences classified, 37 % of the whole derivation). A message that gives
the capsule nothing is remembered as silent, by id (never by content), and not classified again; the capsule is
the same."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from altm.core import Kind, Layer, MemoryUnit, Method, Role, Scope, content_hash
from altm.pipeline.processors import _rules as rules
from altm.pipeline.processors import fold
from altm.pipeline.processors._base import derived_memory

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEXTS = (
    "Sounds good, thanks for looking into that.",
    "We decided to move the billing service to Postgres.",
    "Actually, the deadline is March 3, not March 1.",
    "Can you check /etc/altm/config.toml for the port?",
    "I had a lovely weekend at the lake with the kids.",
    "It must stay under 200 ms at p95.",
    "Haha, that is a great picture of the dog.",
)


def _message(i: int) -> MemoryUnit:
    return derived_memory(scope=SCOPE, session_id="s1", layer=Layer.L0, kind=Kind.MESSAGE,
                          content=f"{TEXTS[i % len(TEXTS)]} ({'note ' * (i % 3)}part {chr(97 + i % 26)})"
                          if i % len(TEXTS) in (0, 4, 6) else TEXTS[i % len(TEXTS)],
                          evidence=[], processor="capture", method=Method.EXTRACTIVE, id_parts=["m", str(i)],
                          valid_from=T0 + timedelta(minutes=i), role=(Role.USER if i % 2 else Role.ASSISTANT).value)


def test_refolding_a_long_session_classifies_only_what_can_give_the_capsule_something(
        monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [_message(i) for i in range(300)]
    classified = 0
    classify = rules.classify

    def counted(sentence: str) -> rules.CueMatch | None:
        nonlocal classified
        classified += 1
        return classify(sentence)

    monkeypatch.setattr(rules, "classify", counted)
    silent = fold.SilentMessages()
    batches = range(20, 301, 20)  # the session folded after each batch of 20 messages, as the runtimes do
    remembered = [fold.extractive_sections(messages[:end], silent) for end in batches]
    with_memo, classified = classified, 0
    again = [fold.extractive_sections(messages[:end]) for end in batches]
    assert remembered == again  # the same capsules
    assert len(silent) > 100  # the chit-chat
    assert with_memo < 0.7 * classified  # on main: every sentence, every time


def test_silent_messages_are_let_go_oldest_first_past_the_limit() -> None:
    silent = fold.SilentMessages(limit=3)
    messages = [_message(i) for i in range(4)]
    for msg in messages:
        silent.add(msg)
    assert messages[0] not in silent and all(m in silent for m in messages[1:]) and len(silent) == 3


def test_a_message_sent_again_under_its_id_with_other_content_is_read_again() -> None:
    """After a forget (no tombstone), a turn may come back under the same id with other content: it is not
    the silent message that was."""
    silent = fold.SilentMessages()
    chit_chat = _message(0)
    assert fold.extractive_sections([chit_chat], silent)["decisions"] == [] and chit_chat in silent
    decided = chit_chat.model_copy(update={"content": TEXTS[1], "content_hash": content_hash(TEXTS[1])})
    assert decided not in silent
    assert fold.extractive_sections([decided], silent)["decisions"] == [f"(assistant) {TEXTS[1]}"]
