"""The write guard reads only the ASCII letters of a text: erased text in another script comes back, and an
unrelated message that shares one number with it is refused.

Finding: the guard's words are ``_TOKEN = re.compile(r"[a-z0-9][a-z0-9_\\-]*")``
(altm/pipeline/writer/guard.py:41), applied after ``normalise_text`` (NFKC + casefold, which keeps Cyrillic,
Greek, CJK... as they are). Every letter outside a-z is dropped, so for a Russian, Greek, Chinese or Japanese
message ``tokens``/``shingles`` (guard.py:139-155) are empty and ``value_hash`` (guard.py:143) hashes only its
ASCII digits. Two consequences:

1. a long erased message in such a script has no shingles and no specific token, so ``distinctive`` is False and
   an exact re-send of it is stored again at L0 (an English message of the same length is refused:
   ``tests/negative/test_erasure_guard.py``); its derived memories are never matched by shingles either;
2. an erased message such as "Мой код от двери подъезда 4417." has the value hash of the bare word "4417" and
   is distinctive (a digit): any later message in that script that names 4417 — "Автобус номер 4417 опоздал
   на десять минут." — has the same value hash and is refused at L0 as "matches erased content". The user's new
   message is lost (the raw record is the one thing README says the guard never eats).

``_terms._WORD`` (altm/pipeline/writer/_terms.py:20, ``[a-z0-9]+``) has the same blind spot for the
other-words rules (only accented *Latin* words get a folded second form, _terms.py:117).

Reproduction: erase a session holding a 14-word Russian sentence and a Russian door code; send the same Russian
sentence in a new session, and an unrelated Russian sentence naming the same number in another.

Expected: the guard tokenizes words of every script (e.g. ``[^\\W_][\\w\\-]*`` on the normalised text, or
``\\w``-based words with digits kept apart), so the exact re-send of the long erased message is refused at L0
(no L0 row holds it; its rejection says "matches erased content"), and the unrelated bus message is stored at L0
and not refused (its derived capsule's bare "4417" may still be left out, as it is for an English message).
"""

from __future__ import annotations

from altm.core.settings import Settings
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn

LONG = ("Моя сестра Мария переезжает в Новосибирск после развода с мужем Алексеем в следующем месяце.")
"""My sister Maria is moving to Novosibirsk next month after her divorce from her husband Alexei (14 words)."""
CODE = "Мой код от двери подъезда 4417."
"""My entrance door code is 4417."""
BUS = "Автобус номер 4417 опоздал на десять минут."
"""Bus number 4417 was ten minutes late: not the door code."""
REFUSED = ("SELECT json_extract(payload, '$.memory.content') AS content FROM rejections "
           "WHERE reason LIKE '%matches erased content%' AND json_extract(payload, '$.memory.layer') = 'L0'")
"""Raw messages the guard refused as erased content (a derived memory that holds the erased value alone, a
capsule's "Numbers and dates: 4417", is refused by design, in English too)."""


async def test_an_exact_resend_of_a_long_erased_non_latin_message_is_refused(settings: Settings) -> None:
    await said_after_erasure(settings, make_turn(1, LONG, session="s-secret"),
                             [make_turn(1, LONG, session="s-resent")])
    stored = [r["content"] for r in rows(settings.data_dir, "SELECT content FROM memories WHERE layer='L0'")]
    assert LONG not in stored  # today: stored again, as if it had never been erased
    assert rows(settings.data_dir, REFUSED) == [{"content": LONG}]


async def test_a_new_non_latin_message_sharing_only_a_number_with_erased_text_is_kept(settings: Settings) -> None:
    await said_after_erasure(settings, make_turn(1, CODE, session="s-secret"),
                             [make_turn(1, BUS, session="s-later")])
    stored = [r["content"] for r in rows(settings.data_dir, "SELECT content FROM memories WHERE layer='L0'")]
    assert stored == [BUS]  # today: refused as "matches erased content" (its value hash is that of "4417")
    assert rows(settings.data_dir, REFUSED) == []
