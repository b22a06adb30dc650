"""``drilldown(marker, query)`` finds no line when the query and the memory spell the same word in another
Unicode form (NFC against NFD, fullwidth against ASCII).

Finding: drilldown's query matching (altm/app/_protocol.py:348-352) takes ``\\w{3,}`` terms of
``query.casefold()`` and keeps the lines whose ``casefold()`` contains one, with no Unicode normalisation on
either side. "Zoë" typed composed (U+00EB) is not a substring of "Zoë" stored decomposed ("e" + U+0308), nor the
other way round (``\\w`` stops at the combining mark, so the decomposed query's term is "zoe", which the composed
line does not contain); "AB-12345" is not in a line that holds the fullwidth "ＡＢ-１２３４５" a Japanese IME
types. The two render the same, and everywhere else the project compares text in one form
(``normalise_text``: NFKC + casefold, altm/core/ids.py:22-24; the word index folds diacritics,
``remove_diacritics 2``), so the host is told the memory has no such line (``lines == []``) while it has.

Reproduction: store a multi-line message, drill down into its marker with a query naming one of its lines in the
other form.

Expected: the query's terms and each line are compared in one normal form (``normalise_text`` on both), so the
line that names the query's word is returned.
"""

from __future__ import annotations

import unicodedata

import pytest

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

NOTES = "Notes from the offsite:\nZoë owns the café rollout.\nBudget review moved to Friday."
ORDER = "Shipping notes:\nOrder ＡＢ-１２３４５ ships on Monday.\nThe invoice follows by mail."


@pytest.mark.parametrize(("stored", "query", "line"), [
    (unicodedata.normalize("NFD", NOTES), "Zoë", 1),  # stored decomposed (macOS, PDFs), asked composed
    (NOTES, unicodedata.normalize("NFD", "Zoë"), 1),  # stored composed, asked decomposed
    (ORDER, "AB-12345", 1),  # stored fullwidth (a Japanese IME), asked in ASCII
], ids=["nfd-stored", "nfd-query", "fullwidth-stored"])
async def test_drilldown_finds_the_line_in_another_normal_form(settings: Settings, stored: str, query: str,
                                                                line: int) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, stored, session="s1")]) as (_rt, app):
        (row,) = rows(s.data_dir, "SELECT memory_id, content_hash FROM memories WHERE layer='L0'")
        found = app.drilldown(f"memory://{row['memory_id']}#{row['content_hash']}", SCOPE, query)
    assert found.lines == [stored.splitlines()[line]]  # today: []
