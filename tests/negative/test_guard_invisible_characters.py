"""An invisible character inside a word takes erased content past the write guard.

Finding: ``normalise_text`` (altm/core/ids.py:22-24), "the form used for identity and matching", is NFKC +
casefold + whitespace collapsing. NFKC keeps the default-ignorable format characters (category Cf: U+00AD SOFT
HYPHEN, U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+FEFF ZERO WIDTH NO-BREAK SPACE...), which render as
nothing, and ``\\s`` does not match them. The guard's words (``_TOKEN``, altm/pipeline/writer/guard.py:41; and
``_terms._WORD``, altm/pipeline/writer/_terms.py:20) then split at them: "44\\u206017" is the two words "44" and
"17", "Lin\\u2060den" is "lin" and "den". So a text that reads exactly as the erased one

* has another ``value_hash`` (guard.py:143): an exact re-send of a distinctive erased message with one such
  character inside its code is stored again at L0 (the same text without it is refused);
* loses the erased message's specific term ("4417", ``_terms.specific``) and its name ("Linden",
  ``_terms.names``): a derived decision that re-states the erased gate code is admitted at L1 and L2 and recalled
  in every later session of the user, where the same sentence without the invisible characters is refused.

Such characters come with ordinary input (chat and web UIs insert soft hyphens and zero-width spaces to break
long words, copy-paste from HTML or PDFs keeps them) as well as from whoever wants erased content back.

Reproduction: erase a session holding "We decided the gate code for the Linden Street building is 4417.";
re-send it with a word joiner inside 4417; then, in another session, say the same decision with word joiners in
"Linden" and "4417", and ask for the gate code in a third session.

Expected: matching ignores default-ignorable code points as Unicode's NFKC_Casefold does (strip them in
``normalise_text``, e.g. every character whose ``unicodedata.category`` is "Cf"), so the re-send is refused at L0
as the plain re-send is, no derived memory holds the erased code, and the bundle of the third session does not
quote it.
"""

from __future__ import annotations

import re

import pytest

from altm.core.settings import Settings
from tests.support.memories import said_after_erasure, store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = "We decided the gate code for the Linden Street building is 4417."
INVISIBLE = {"soft hyphen": "\u00ad", "zero width space": "\u200b", "word joiner": "\u2060",
             "zero width no-break space": "\ufeff"}
REFUSED_L0 = ("SELECT 1 FROM rejections WHERE reason LIKE '%matches erased content%' "
              "AND json_extract(payload, '$.memory.layer') = 'L0'")


ESCAPED = re.compile(r"\[U\+[0-9A-F]{4,6}\]")
"""How a bundle shows such a character to the model ("44[U+2060]17": tests/negative/test_bundle_joiners_escaped.py)."""


def visible(text: str) -> str:
    return "".join(c for c in ESCAPED.sub("", text) if c not in INVISIBLE.values())


@pytest.mark.parametrize("char", INVISIBLE.values(), ids=INVISIBLE.keys())
async def test_an_exact_resend_with_an_invisible_character_is_refused(settings: Settings, char: str) -> None:
    resent = ERASED.replace("4417", f"44{char}17")
    await said_after_erasure(settings, make_turn(1, ERASED, session="s-secret"),
                             [make_turn(1, resent, session="s-resent")])
    stored = [r["content"] for r in rows(settings.data_dir, "SELECT content FROM memories")]
    assert [c for c in stored if "4417" in visible(c)] == []  # today: the L0 row, and a capsule and decision
    assert len(rows(settings.data_dir, REFUSED_L0)) == 1  # as the plain re-send is


async def test_a_restated_erased_code_with_invisible_characters_is_not_derived_or_recalled(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    joiner = INVISIBLE["word joiner"]
    restated = f"We decided the gate code for the Lin{joiner}den Street building is 44{joiner}17 from now on."
    async with store_with(s, [make_turn(1, ERASED, session="s-secret")]) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        await rt.publish([make_turn(1, restated, session="s-later")])
        await rt.run_until_idle()
        prepared = await app.prepare_turn(SCOPE, "s-next", "n1", "What is the gate code for the Linden building?",
                                          800)
    derived = [r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer != 'L0'")]
    # the same sentence without the word joiners: its capsule statement and decision are refused
    assert [c for c in derived if "4417" in visible(c)] == []
    assert "4417" not in visible(prepared.bundle.rendered)  # today: "... building is 44[U+2060]17 from now on."
