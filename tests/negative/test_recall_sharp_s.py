"""Recall does not find a German message by a word with "ß" typed exactly as stored ("Straße", "Grüße",
"Fußball"): the query asks "strasse", which neither index holds.

Finding: ``query_terms`` (altm/recall/retrieval/_engine.py:115-125) takes its words from ``text.casefold()``
only (and that form's NFKC). Full case folding maps "ß" (and capital "ẞ") to "ss", so "Hauptstraße" is asked as
"hauptstrasse". The word index folds with its unicode61 tokenizer (simple, one code point for one, and
``remove_diacritics`` leaves "ß" alone: altm/store/sql/0002_scope_terms.sql:18-21), and since schema 24 holds
the content's NFKC form, which also keeps "ß" (``index_form``, altm/store/_text_index.py:33-37): the stored
word is "hauptstraß", and the query's stemmed "hauptstrass" never matches it. The trigram fallback asks the same
casefolded terms (``_trigram_terms``, _engine.py:213-220), whose "ass"/"sse" trigrams are not in "…aße" either,
and ``_identifiers`` only takes runs with a digit or inner punctuation. So a message about "Hauptstraße" is not
recalled by "Hauptstraße" (nor by "hauptstraße"); every German word with "ß" is unsearchable by its own
spelling, while "Strasse" typed the Swiss way doesn't find it either. The query side and the index side fold
case differently: casefold() is not what unicode61 does.

Reproduction: model-free, no embedder; store "Wir treffen uns morgen früh vor der Bäckerei in der Hauptstraße."
beside two unrelated English messages; search "Hauptstraße".

Expected: the query also asks each word in the form the index folds it to (``lower()`` rather than
``casefold()``, or both; the NFKC of that), so a word typed as stored matches; the message is recalled.
"""

from __future__ import annotations

import pytest

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

GERMAN = "Wir treffen uns morgen früh vor der Bäckerei in der Hauptstraße."
"""We meet tomorrow morning in front of the bakery on Hauptstraße."""
OTHERS = ["The invoice for the printer follows by mail.", "Lunch with the vendor is on Thursday."]


@pytest.mark.parametrize("query", ["Hauptstraße", "hauptstraße"])
async def test_a_word_with_sharp_s_recalls_its_message(settings: Settings, query: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([*OTHERS, GERMAN], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", query)
    assert GERMAN in [h.content for h in result.hits]  # today: no hit at all


async def test_another_word_of_the_same_message_finds_it(settings: Settings) -> None:
    """The control: a word of that message without "ß" ("Bäckerei", folded by both sides alike) recalls it."""
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([*OTHERS, GERMAN], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", "Bäckerei")
    assert GERMAN in [h.content for h in result.hits]
