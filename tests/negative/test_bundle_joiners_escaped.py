"""Zero-width joiners of ordinary text (emoji sequences, Persian, Indic scripts) are rendered as ``[U+200D]``.

Finding: since 4b9c227 ``_escaped`` (altm/recall/context/_bundle.py:102-112) replaces every character of
``_INVISIBLE`` with a visible ``[U+XXXX]``. The class includes U+200C ZERO WIDTH NON-JOINER and U+200D ZERO
WIDTH JOINER (``\\u200b-\\u200f``). Neither reorders text nor hides a control sequence: they only decide how two
neighbouring characters join, and ordinary text needs them. Every emoji made of several (a family 👨‍👩‍👧, a
rainbow flag 🏳️‍🌈, a profession 👩‍💻) holds U+200D; Persian writes U+200C inside common words (می‌خواهم "I want",
کتاب‌ها "books"); Hindi, Bengali and Malayalam use both for conjuncts. A user's message "We adopted a dog 🐕‍🦺
for the family 👨‍👩‍👧" is shown to the model as "🐕[U+200D]🦺 ... 👨[U+200D]👩[U+200D]👧", and a Persian
memory with a literal ``[U+200C]`` in the middle of its words: text the user never wrote, which the model may
repeat, cite or misread, and which costs tokens (each escape is several).

Expected: the joiners (U+200C, U+200D) of ordinary text reach the rendering unchanged, as the letters around
them do; the escape stays for controls, bidi overrides and isolates, and the invisible characters that carry
no meaning in text (U+200B, U+2060, U+FEFF). (A joiner is only a risk as part of a homoglyph; escaping it does
not stop one.)
"""

from __future__ import annotations

import pytest

from altm.recall.context import build_bundle
from altm.recall.retrieval import Hit

TEXTS = {
    "emoji": "We adopted a service dog \U0001f415\u200d\U0001f9ba for the family \U0001f468\u200d\U0001f469"
             "\u200d\U0001f467 in May.",
    "persian": "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \u06a9\u062a\u0627\u0628\u200c\u0647\u0627 "
               "\u0631\u0627 \u0628\u062e\u0648\u0627\u0646\u0645.",  # "I want to read the books"
    "hindi": "\u0915\u094d\u200d\u0937 is how I write the conjunct in my notes.",
}


def _hit(content: str) -> Hit:
    return Hit(memory_id=f"mem_{1:032x}", layer="L0", kind="message", content=content, content_hash="ab" * 32,
               scope="acme/platform/dana/coder", session_id="s1", source_id=None, source_ids=[], role="user",
               valid_from="2026-11-02T09:00:00+00:00", method="verbatim", trust_status="unverified",
               trust_reason=None, score=1.0, channels={"words": 1}, breakdown={})


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_joiners_of_ordinary_text_reach_the_rendering_unchanged(name: str) -> None:
    text = TEXTS[name]
    bundle = build_bundle([_hit(text)], query="family", scope="acme/platform/dana/coder", session_id="s1",
                          preset="default", token_budget=2000)
    assert bundle.items and not bundle.items[0].compressed, "the memory fits the budget whole"
    assert f"  > {text}" in bundle.rendered, (
        f"the {name} memory is not rendered as written: {bundle.rendered.splitlines()[-2]!r}")
