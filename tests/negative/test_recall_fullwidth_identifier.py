"""Recall's word and trigram channels do not find an identifier written in fullwidth forms by its ASCII spelling,
nor the other way round.

Finding: the FTS5 tables index the stored content as it is (triggers copy ``new.content``:
altm/store/sql/0002_scope_terms.sql:18-27 ``porter unicode61 remove_diacritics 2``, the trigram table of
0001_init.sql:102-104 as 0011_trigram_on_content.sql keeps it; neither tokenizer applies compatibility
normalisation: unicode61 folds case and diacritics, not width), and the query's words are only casefolded
(``query_terms``, altm/recall/retrieval/_engine.py:100-106; the trigram terms come from the same words or the
raw query, _engine.py:178-183). A Japanese or Chinese IME types Latin letters and digits fullwidth
("ＡＢ-１２３４５", U+FF21…), so an order number, ticket id or room number said that way is a different word from
"AB-12345" to both channels, and a search for it recalls nothing. NFKC maps one onto the other, and it is the form
the rest of the project identifies text by (``normalise_text``, altm/core/ids.py:22-24); the trigram channel
exists for exactly such identifiers (README: "what word tokenization breaks (identifiers, paths, versions,
typos)").

Reproduction: model-free, no embedder (so only the word, trigram and graph channels answer); store a message
naming the order fullwidth beside two others, search "AB-12345"; and the mirror case, stored ASCII and searched
fullwidth.

Expected: the word and trigram channels compare an NFKC form of the content and of the query (index
``normalise_text(content)`` rather than the raw content, and normalise the query the same way), so the message
that names the order is recalled in both cases.
"""

from __future__ import annotations

import pytest

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

FULLWIDTH = "Order ＡＢ-１２３４５ ships on Monday from the Osaka warehouse."
ASCII = "Order AB-12345 ships on Monday from the Osaka warehouse."
OTHERS = ["The invoice for the printer follows by mail.", "Lunch with the vendor is on Thursday."]


@pytest.mark.parametrize(("stored", "query"), [(FULLWIDTH, "AB-12345"),
                                               (ASCII, "ＡＢ-１２３４５")],
                         ids=["stored-fullwidth", "asked-fullwidth"])
async def test_an_identifier_is_recalled_whatever_its_width(settings: Settings, stored: str, query: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([*OTHERS, stored], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", query)
    assert stored in [h.content for h in result.hits]  # today: no hit at all


async def test_a_fullwidth_query_still_finds_what_was_stored_fullwidth(settings: Settings) -> None:
    """The query's NFKC form is asked beside its own: a user who stores and asks fullwidth is found as before."""
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, text, session="s1") for i, text in enumerate([*OTHERS, FULLWIDTH], start=1)]
    async with store_with(s, turns) as (_rt, app):
        result = app.search(SCOPE, "s1", "ＡＢ-１２３４５")
    assert FULLWIDTH in [h.content for h in result.hits]
