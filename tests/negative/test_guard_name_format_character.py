"""An erased message whose name carries an invisible format character (a soft hyphen, a zero-width space) loses
the guard's names rule: what re-states it with the name is admitted, where the same message without the
character refuses it.

Finding: this morning's fix made ``normalise_text`` drop Unicode format characters (``_FORMAT``,
altm/core/ids.py:22-27 and :36-42) so that one inside a word no longer splits it, and ``terms`` (which normalises
first, altm/pipeline/writer/_terms.py:127-129) reads "Dub\\u00adois" as "dubois". But ``names``
(altm/pipeline/writer/_terms.py:161-178), which marks the terms of an erased message's names ``n:`` in its
tombstone (``keyed_terms``, altm/pipeline/writer/guard.py:200-209), still runs ``_CAPITALISED``
(``(?<![\\w'’])[^\\W\\d_][\\w'’\\-]*``, _terms.py:26) on the raw text (it only composes it, NFC, since the fix for
decomposed names): a format character is not ``\\w``, so "Dub\\u00adois" is "Dub" (the name's term "dub") and
"ois" (not capitalised). The name's real term ("duboi") is in the tombstone but marked ``t:``, so the rule "one of
its names and two more of its terms re-states it" (``restates_terms``, guard.py:226-244) never fires for such a
tombstone. Soft hyphens and zero-width spaces are what text copied from a hyphenated web page or a PDF carries;
they render as nothing. It is the NFD defect (tests/negative/test_guard_decomposed_name.py) again, through the
other normalisation step the fix did not carry over to ``names``.

Reproduction: erase a session holding "Last night I told Emile Dub<U+00AD>ois about the surprise party for his
wife." (and the same with U+200B), then say "We decided Dubois's surprise party is at the lake house with cake,
balloons and a band." in another session (model-free pipeline, no embedder).

Expected: the tombstone is the same with or without an invisible character in the name (``names`` reads the text
as ``normalise_text`` does, format characters dropped), so the later decision atom (L2) and the capsule statement
(L1) are refused as "matches erased content", as they are when the erased message came without it.
"""

from __future__ import annotations

import pytest

from altm.core.settings import Settings
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn

ERASED = "Last night I told Emile {name} about the surprise party for his wife."
LATER = "We decided Dubois's surprise party is at the lake house with cake, balloons and a band."


@pytest.mark.parametrize("name", ["Dubois", "Dub\u00adois", "Dub\u200bois"], ids=["plain", "soft-hyphen", "zwsp"])
async def test_an_invisible_character_in_a_name_still_guards_the_erased_message(settings: Settings,
                                                                                  name: str) -> None:
    await said_after_erasure(settings, make_turn(1, ERASED.format(name=name), session="s-secret"),
                             [make_turn(1, LATER, session="s-later")])
    derived = rows(settings.data_dir, "SELECT layer, content FROM memories WHERE layer IN ('L1', 'L2') "
                                      "AND content LIKE '%surprise party%'")
    assert derived == []  # today, with the invisible character: the decision (L2) and the capsule statement (L1)
    refused = rows(settings.data_dir, "SELECT json_extract(payload, '$.memory.layer') AS layer FROM rejections "
                                      "WHERE reason LIKE '%matches erased content%' ORDER BY layer")
    assert [r["layer"] for r in refused] == ["L1", "L2"]  # as when the erased message came without it
