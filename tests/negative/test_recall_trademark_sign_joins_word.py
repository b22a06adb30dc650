"""A word written with a trademark sign ("Acme™", "Kindle™") is no longer found by the word itself, and a query
that types the sign finds nothing written without it: the index form glues the sign's letters onto the word.

Finding: since schema 24 both text indexes hold :func:`index_form` of the content, and the query asks the same
form (altm/store/_text_index.py:50-55, altm/recall/retrieval/_engine.py:132-142). ``index_form`` is NFKC, and
NFKC spells out compatibility symbols as letters: "™" (U+2122, a symbol, which unicode61 took for a separator) is
"TM", "℠" "SM", "№" "No", "㎏" "kg". "Acme™" was the token "acme" (schema 23: the tokenizer saw the raw text); it
is now the one token "acmetm", and the query's "acme" matches nothing. The other way round, a query that types
"Acme™" now asks only "acmetm" (``query_terms`` used to ask the casefolded word too, whose "™" split it off), so
a message that says "Acme" is not recalled either. The trigram fallback rescues the first case only while the word
channel finds fewer than ``top_k`` memories (``_trigram_terms``, _engine.py:229-235): with ordinary traffic it
finds enough for the query's other word, and the message about Acme is gone from recall. The intent of schema 24
(fullwidth letters the same as ASCII, "ß" as "ss") needs NFKC for letters and digits, not a symbol turned into
letters that join its neighbour.

Reproduction: model-free, no embedder. (1) Store "We signed the Acme™ contract on Tuesday." beside twelve
messages about a meeting; ask "When is the meeting with Acme?". (2) Store "We signed the Acme contract on
Tuesday." beside two unrelated messages; ask "Acme™".

Expected: a compatibility symbol that NFKC spells out in letters stays apart from the word it follows (the index
form keeps a separator where a symbol was, or leaves symbols out of NFKC), as schema 23 tokenized it; both
messages are recalled.
"""

from __future__ import annotations

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

MEETINGS = [f"The meeting about item {n} went fine, notes follow." for n in
            ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")]
OTHERS = ["The invoice for the printer follows by mail.", "Lunch with the vendor is on Thursday."]


async def test_a_word_written_with_a_trademark_sign_is_found_by_the_word(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    said = "We signed the Acme™ contract on Tuesday."
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([said, *MEETINGS], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", "When is the meeting with Acme?")
    assert said in [h.content for h in result.hits]  # today: only the meetings


async def test_a_query_typing_the_trademark_sign_finds_the_word_without_it(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    said = "We signed the Acme contract on Tuesday."
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([*OTHERS, said], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", "Acme™")
    assert said in [h.content for h in result.hits]  # today: no hit at all
