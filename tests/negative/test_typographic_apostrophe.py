"""A typographic apostrophe ("don’t", U+2019, what phones and macOS type by default) is not read as one: an
anti-pattern said with it is never stored, and a decision that speaks against a stored one is refused.

Finding: the negation and anti-pattern cues are written with the ASCII apostrophe only, and the text they run on
is not normalised for it (NFKC keeps U+2019 RIGHT SINGLE QUOTATION MARK as it is):

* ``_NEGATION`` (altm/pipeline/writer/guard.py:47-48: ``don't|…|shouldn't|…|mustn't``), used by
  ``negates``/``leaves_out``/``negated_about`` (guard.py:105-136) on ``text.casefold()``: "We decided we
  shouldn’t pickle the session cache." is not negated, so ``reassertion`` counts it as re-asserting the
  anti-pattern "use pickle for the session cache": the decision atom is refused ("write guard: re-asserts
  anti-pattern …") and the session capsule held for review as uncertain. The same sentence typed with "'" is
  stored. The user's decision is lost.
* ``_ANTI`` (altm/pipeline/processors/_rules.py:81-87: ``don't|do not|dont|never|avoid|stop|shouldn't|…``):
  "Don’t use pickle for the session cache because it broke the deploy, use JSON instead." matches no cue, so
  no anti-pattern is stored and the guard has nothing to refuse "We decided to pickle the session cache." with,
  which it refuses when the anti-pattern was typed with "'".

``_terms`` already reads U+2019 as an apostrophe (altm/pipeline/writer/_terms.py:26, 148); these rules do not.

Reproduction: model-free pipeline, no embedder; the anti-pattern in session s1, the later statement in s2.

Expected: a typographic apostrophe (U+2019, also U+02BC and the fullwidth U+FF07) reads as "'" wherever cue
and negation rules match (e.g. fold them in one place before matching): the "shouldn’t" decision is stored
at L2 with no rejection and its capsule is not held as uncertain, exactly as with "shouldn't"; and the "Don’t …
because …" message is stored as an anti-pattern atom, after which "We decided to pickle the session cache." is
refused, exactly as after "Don't …".
"""

from __future__ import annotations

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import make_turn

ANTI_PATTERN = "Don't use pickle for the session cache because it broke the deploy, use JSON instead."
TYPOGRAPHIC = ANTI_PATTERN.replace("'", "\u2019")
AGAINST = "We decided we shouldn\u2019t pickle the session cache."
FOR = "We decided to pickle the session cache."
REASSERTS = "SELECT 1 FROM rejections WHERE reason LIKE '%re-asserts anti-pattern%'"


async def test_a_decision_against_an_anti_pattern_typed_with_a_typographic_apostrophe_is_kept(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, ANTI_PATTERN, session="s1"), make_turn(1, AGAINST, session="s2")]):
        pass
    decisions = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L2' AND kind='decision'")
    assert decisions == [{"content": AGAINST}]  # today: refused as re-asserting the anti-pattern
    assert rows(s.data_dir, REASSERTS) == []
    capsule = rows(s.data_dir, "SELECT trust_status FROM memories WHERE layer='L1' AND session_id='s2'")
    assert capsule and capsule[0]["trust_status"] != "uncertain"


async def test_an_anti_pattern_typed_with_a_typographic_apostrophe_guards(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, TYPOGRAPHIC, session="s1"), make_turn(1, FOR, session="s2")]):
        pass
    stored = rows(s.data_dir, "SELECT kind, content FROM memories WHERE layer='L2'")
    assert {"kind": "anti_pattern", "content": TYPOGRAPHIC} in stored  # today: no atom of it at all
    assert {"kind": "decision", "content": FOR} not in stored
    assert len(rows(s.data_dir, REASSERTS)) >= 1
