"""An erased message whose names are typed decomposed (NFD: "E" + U+0301 for "É") loses the names rule: what
re-states it with the name is admitted, where the same message typed composed (NFC) refuses it.

Finding: ``names`` (altm/pipeline/writer/_terms.py:160-178), which marks the terms of an erased message's names
in its tombstone (``keyed_terms``, altm/pipeline/writer/guard.py:163-172), runs ``_CAPITALISED``
(``(?<![\\w'’])[^\\W\\d_][\\w'’\\-]*``, _terms.py:26) on the raw text, before any normalisation. ``\\w`` does not
match a combining mark, so in NFD "Émile" is "E" (shorter than three letters: dropped) and "mile" (not
capitalised: no name), "Müller" is "Mu" and "ller". The terms themselves are the same in both forms (``terms``
normalises with NFKC first), but none of them is marked ``n:``, so the rule "one of its names and two more of
its terms re-states it" (``restates_terms``, guard.py:184-204) never fires for such a tombstone. NFD text is
what macOS file names, some input methods and text copied from PDFs carry; the two forms render identically.

Reproduction: erase a session holding "Last night I told Émile Dubois about the surprise party for his wife."
(NFD), then say "We decided Émile's surprise party is at the lake house with cake, balloons and a band." in
another session (model-free pipeline, no embedder).

Expected: the tombstone is the same whichever normal form the erased message came in (``names`` reads the text
in NFC, as ``terms`` reads it in NFKC), so the later decision atom and the capsule statement are refused as
"matches erased content", as they are when the erased message was typed in NFC.
"""

from __future__ import annotations

import unicodedata

import pytest

from altm.core.settings import Settings
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn

ERASED = "Last night I told {name} Dubois about the surprise party for his wife."
LATER = "We decided {name}'s surprise party is at the lake house with cake, balloons and a band."


@pytest.mark.parametrize("name", ["Émile", "Jürgen"])
async def test_a_name_typed_decomposed_still_guards_the_erased_message(settings: Settings, name: str) -> None:
    erased = unicodedata.normalize("NFD", ERASED.format(name=name))
    later = LATER.format(name=name)  # typed composed, as most keyboards do
    await said_after_erasure(settings, make_turn(1, erased, session="s-secret"),
                             [make_turn(1, later, session="s-later")])
    derived = rows(settings.data_dir, "SELECT layer, content FROM memories WHERE layer IN ('L1', 'L2') "
                                      "AND content LIKE '%surprise party%'")
    assert derived == []  # today: the decision (L2) and the capsule statement (L1) are stored
    refused = rows(settings.data_dir, "SELECT json_extract(payload, '$.memory.layer') AS layer FROM rejections "
                                      "WHERE reason LIKE '%matches erased content%' ORDER BY layer")
    assert [r["layer"] for r in refused] == ["L1", "L2"]  # as when the erased message came composed
