"""Recall finds nothing for a query in Hindi, Tamil, Bengali or any script whose words carry vowel signs and
viramas: the message said in those very words is never a hit.

Finding: ``query_terms`` (altm/recall/retrieval/_engine.py:115-125) cuts the casefolded query into words with
``_WORD = [\\w][\\w'\\-]*`` (_engine.py:44). Python's ``\\w`` holds letters and digits only, not the combining
marks (categories Mn/Mc: ि U+093F, ् U+094D, ் U+0BCD, ...) that sit inside almost every word of the Indic
scripts, so "दिल्ली" (Delhi) falls apart into "द", "ल" and "ल", and "சென்னையில்" (in Chennai) into "ச", "ன",
"ன", "ய", "ல" — one letter each, all under ``min_len`` 2. The query has no terms: the word channel asks nothing
(``SearchQueries.words`` returns [] for no terms, altm/store/_search.py:134-135) and neither does the trigram
channel, whose fallback takes the same terms of three or more characters (``_trigram_terms``, _engine.py:213-220)
and whose identifier runs need a digit, underscore or inner punctuation (``_identifiers``, _engine.py:49-54).
The word index is no help either: its unicode61 tokenizer also splits at the marks
(altm/store/sql/0002_scope_terms.sql:18-21 keeps the default token categories), so it holds the same one-letter
scraps. Only an embedding model can find such a message; with ``embedder: none`` (model-free, documented) or
when the embedding endpoint fails (recall then goes on without its vector channel, _engine.py:184-196), recall of
a Hindi or Tamil conversation is empty, though the same test in Russian, Greek, Korean or Thai finds it.

Reproduction: model-free, no embedder; store a Hindi message and a Tamil message beside two unrelated English
ones, search each by a word of it exactly as stored ("दिल्ली", "சென்னையில்").

Expected: a word of these scripts is one query term (word characters *and* combining marks, e.g.
``[\\w\\p{M}]``-style runs, as the index tokenizes them once its tokenizer keeps marks: unicode61
``categories 'L* N* Co M*'`` and a re-index), or at least the trigram channel asks the query's own runs of
letters and marks; the message holding the word is recalled.
"""

from __future__ import annotations

import pytest

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

HINDI = "मेरी बहन दिल्ली में रहती है और अगले महीने मुंबई जा रही है।"
"""My sister lives in Delhi and is moving to Mumbai next month."""
TAMIL = "என் அக்கா சென்னையில் வசிக்கிறார், அடுத்த மாதம் மதுரைக்கு செல்கிறார்."
"""My elder sister lives in Chennai and goes to Madurai next month."""
OTHERS = ["The invoice for the printer follows by mail.", "Lunch with the vendor is on Thursday."]


@pytest.mark.parametrize(("stored", "query"), [(HINDI, "दिल्ली"), (TAMIL, "சென்னையில்")], ids=["hindi", "tamil"])
async def test_a_word_with_combining_marks_recalls_its_message(settings: Settings, stored: str, query: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([*OTHERS, stored], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", query)
    assert stored in [h.content for h in result.hits]  # today: no hit at all (the query has no terms)


async def test_the_same_search_in_a_script_without_marks_finds_it(settings: Settings) -> None:
    """The control: a Russian message searched by one of its words is found (Cyrillic letters are ``\\w``)."""
    russian = "Моя сестра живёт в Новосибирске и в следующем месяце переезжает в Москву."
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([*OTHERS, russian], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", "Новосибирске")
    assert russian in [h.content for h in result.hits]
