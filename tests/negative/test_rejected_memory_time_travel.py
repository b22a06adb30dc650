"""A memory a reviewer rejected comes back in every ``as_of`` / ``known_at`` recall.

Finding: a reviewer's rejection sets ``lc_state='rejected'`` (``altm/pipeline/writer/ops/governance.py:121-144``,
``_review_memory``; the facets standing on the atom follow it), and "rejected ones leave recall but stay for the
audit" (README, "Review queue"). Default recall keeps them out through ``ScopePolicy._time``
(``altm/store/_policy.py:63-65``: ``lc_state NOT IN ('rejected', 'forgotten')``), but as soon as a query names a
time the predicate is rebuilt without that condition (``altm/store/_policy.py:66-76``: only ``valid_from`` /
``valid_to``, ``recorded_at`` / ``superseded_at``, and ``lc_state IS NOT 'merged'``). A rejection closes
neither the validity nor the record time, so a rejected atom and its rejected persona facet are returned by
``search(..., as_of=now)`` and ``search(..., known_at=now)`` (``altm query --as-of`` / ``--known-at`` and the
Python API), as if valid in the world and believed by the store today: a claim a reviewer judged false (a
poisoned tool claim, a wrong extraction) is served again to whoever asks "what held at T".

Reproduction: "I prefer dark mode in every editor." derived (an L2 atom and its L4 facet); the atom rejected
through ``review_decide``; then the same lexical search with no time, with ``as_of=now`` and with
``known_at=now``.

Expected: a rejected memory is in no recall whose time is after its rejection: the searches with ``as_of=now``
and ``known_at=now`` return neither the rejected atom nor its facet (both return what the default recall
returns for them: nothing).
"""

from __future__ import annotations

from datetime import UTC, datetime

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

DARK = "I prefer dark mode in every editor."
QUERY = "editor mode dark"


async def test_a_rejected_memory_stays_out_of_recall_at_a_time_after_its_rejection(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, DARK, session="a")]) as (rt, app):
        before = {h.layer for h in app.search(SCOPE, "b", QUERY, preset_name="lexical").hits}
        assert before == {"L2", "L4"}, before
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer = 'L2'")
        request = await app.admin.review_decide(SCOPE, str(atom["memory_id"]), "reject")
        await rt.run_until_idle()
        assert app.admin.outcome(request).status == "applied"
        assert {str(r["layer"]): str(r["lc_state"]) for r in rows(
            s.data_dir, "SELECT layer, lc_state FROM memories WHERE layer IN ('L2', 'L4')")} == {
            "L2": "rejected", "L4": "rejected"}
        now = datetime.now(UTC)
        default = [(h.layer, h.content) for h in app.search(SCOPE, "b", QUERY, preset_name="lexical").hits]
        as_of = [(h.layer, h.content) for h in app.search(SCOPE, "b", QUERY, preset_name="lexical",
                                                          as_of=now).hits]
        known_at = [(h.layer, h.content) for h in app.search(SCOPE, "b", QUERY, preset_name="lexical",
                                                             known_at=now).hits]
    assert default == []
    assert as_of == [], ("a rejected memory is recalled as valid now", as_of)
    assert known_at == [], ("a rejected memory is recalled as believed now", known_at)
