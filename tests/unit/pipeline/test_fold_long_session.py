"""A long session was folded at a cost that grew with its length: its capsule is made again after each batch
of its messages, and every message of the session was classified again each time (a 2,000-turn session,
published 20 turns at a time: 88,822 sentences classified, 37 % of the whole derivation). A message that gives
the capsule nothing is remembered as silent, by id (never by content), and not classified again; the capsule is
the same."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from altm.core import (
    Kind,
    Layer,
    MemoryUnit,
    Method,
    Proposal,
    Role,
    Scope,
    Settings,
    TurnEvent,
    content_hash,
    partition_for,
)
from altm.pipeline.processors import _rules as rules
from altm.pipeline.processors import fold
from altm.pipeline.processors._base import derived_memory
from altm.store._rows import row_to_memory
from tests.support.memories import running

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


def _message_with(memory_id: str, text: str) -> MemoryUnit:
    return _message(0).model_copy(update={"memory_id": memory_id, "content": text, "content_hash": content_hash(text),
                                          "role": Role.USER.value})


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


def _turns(n: int) -> list[TurnEvent]:
    return [TurnEvent(scope=SCOPE, session_id="s1", turn_id=f"t{i}", role=Role.USER if i % 2 else Role.ASSISTANT,
                      content=_message(i).content, timestamp=T0 + timedelta(minutes=i)) for i in range(n)]


async def test_a_long_sessions_capsule_cites_what_its_text_comes_from_and_stays_bounded(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The capsule cited every message of its session, so each fold (after every batch) wrote the whole
    session's ids again: into the evidence edges, the proposal and change records, and the audit row (old and
    new value): storage quadratic in the session's length. And fold read every message of the session as a
    full memory each time. Now it cites the first message (the capsule's date) and those its sections come
    from, and reads in full only the messages not known to give it nothing."""
    decoded, folding = 0, False

    def counted(row: Any) -> MemoryUnit:
        nonlocal decoded
        decoded += folding
        return row_to_memory(row)

    real_fold = fold.FoldProcessor._fold

    async def folded(self: fold.FoldProcessor, *args: Any) -> list[Proposal]:
        nonlocal folding
        folding = True
        try:
            return await real_fold(self, *args)
        finally:
            folding = False

    monkeypatch.setattr("altm.store._reader.row_to_memory", counted)
    monkeypatch.setattr(fold.FoldProcessor, "_fold", folded)
    turns = _turns(280)
    async with running(settings.model_copy(update={"embedder": "none"})) as rt:
        for start in range(0, len(turns), 20):  # 14 batches: the session is folded after each
            await rt.publish(turns[start:start + 20])
            await rt.run_until_idle()
        fold_decoded = decoded
        shard = rt.shards.get(partition_for(SCOPE.home, settings.partitions))
        ((evidence, content, capsule_id),) = shard._db.execute(
            "SELECT evidence, content, memory_id FROM memories WHERE layer='L1'").fetchall()
        audit = shard._db.execute("SELECT SUM(LENGTH(old_value)) + SUM(LENGTH(new_value)) FROM audit_log "
                                  "WHERE target_id=?", (capsule_id,)).fetchone()[0]
        messages = {r[0]: r[1] for r in shard._db.execute(
            "SELECT memory_id, content FROM memories WHERE layer='L0' ORDER BY valid_from")}
    cited = orjson.loads(evidence)
    first = next(iter(messages))
    giving = [mid for mid, text in messages.items()
              if any(fold.extractive_sections([_message_with(mid, text)]).values())]
    sections = fold.extractive_sections([_message_with(mid, text) for mid, text in messages.items()])
    said = [re.sub(r"^\(\w+\) ", "", item) for key in ("decisions", "constraints", "corrections", "open_questions")
            for item in sections[key]]
    assert f"Session s1 ({len(messages)} messages" in content
    assert cited[0] == first and set(cited) <= {first, *giving}  # on main: all 280 messages
    assert said and all(any(item in messages[mid] for mid in cited) for item in said)  # each from a cited one
    assert len(cited) < 0.5 * len(messages)
    assert audit < 120_000  # on main: 14 folds each writing the growing list twice (~330 KB)
    every_time = sum(range(20, len(turns) + 1, 20))  # on main: every message of the session, at every fold
    assert fold_decoded < 0.7 * every_time  # 4 of the 7 texts give the capsule something: read each time


async def test_remembered_sections_go_with_an_erasure(settings: Settings) -> None:
    """The fold stage remembers what each message gives its capsule (a long session was classified whole at
    each fold); those are the messages' sentences, so an erasure reaching fold lets them all go."""
    from altm.wiring import open_embedded
    from tests.support.memories import runtime_of
    from tests.support.turns import SCOPE, make_turn

    s = settings.model_copy(update={"embedder": "none"})
    async with open_embedded(s) as deployment:
        rt = runtime_of(deployment)
        folder = next(p for p in rt._processors if isinstance(p, fold.FoldProcessor))
        await rt.publish([make_turn(i, f"We decided to pay {i} dollars on 2024-03-0{i}.", session="s1")
                          for i in range(1, 4)])
        await rt.run_until_idle()
        assert len(folder.sections) == 3
        await deployment.app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        assert len(folder.sections) == 0
