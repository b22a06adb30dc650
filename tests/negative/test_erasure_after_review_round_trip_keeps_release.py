"""Erasing the session of a first saying that a reviewer rejected and approved back leaves, in the source, the
record of a release its replay never makes: the replay of the log differs (state hash), where the same erasure
without the review round trip replays equal.

Finding: tea (day 0, s0), "coffee … now, actually" (day 1, s1), tea again (day 2, s2): the tea facet stands on the
s0 atom and is superseded by coffee (decision D). A reviewer rejects the s0 atom: the facet moves onto the s2 atom
and govern places it again after coffee, releasing it from coffee (a ``release`` decision R of the pair tea/coffee,
altm/pipeline/processors/govern.py:289-293 and ``_release``, altm/pipeline/writer/ops/governance.py:93-107). The
reviewer approves the s0 atom back: since 00a3bc4 the facet is re-cited on s0 (``_facets_following``,
governance.py:276-281) and govern supersedes it by coffee again (D, applied anew). The user then erases session s0:
the facet is re-cited on s2 and, being superseded by a version said before its new first saying, released; the
erasure drops the decisions that placed the two in that order (``_placed_later``,
altm/pipeline/writer/ops/erasure.py:133-155), but ``drop_supersede_decisions`` (altm/store/_tx/_erasure.py:255-265)
drops only ``supersede`` decisions of the pair, not R, the ``release`` of the same pair, which exists only because
the erased saying had placed tea before coffee. A replay (the s0 session shredded: the reviews of its atom are
void) never places tea at day 0, so it has neither D nor R: the source's governance_events keep R's three steps and
the replay's do not. The erasure alone (no review) replays equal.

Reproduction: embedded runtime, no embedder, sessions s0/s1/s2 on days 0/1/2 (``said_on``), each derived before
the next; ``review_decide(s0 atom, "reject")``, ``"approve"``; ``erase(session s0)``; ``replay_into`` a fresh
data dir and compare (``tests/support/replay.py``).

Expected: the replay equals the source, as after the erasure alone (e.g. the erasure drops the ``release``
decisions of the pair as well as its ``supersede`` decisions: both recorded an order only the erased saying
gave).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, said_on
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."


async def _erased_after(settings: Settings, reviews: tuple[str, ...]) -> None:
    async with store_with(settings, [said_on(0, TEA)]) as (rt, app):
        for turn in (said_on(1, COFFEE), said_on(2, TEA)):
            await rt.publish([turn])
            await rt.run_until_idle()
        (first,) = rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer = 'L2' AND session_id = 's0'")
        for decision in reviews:
            await app.review_decide(SCOPE, str(first["memory_id"]), decision)
            await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s0")
        await rt.run_until_idle()


def _releases(data_dir: Path) -> list[str]:
    """The recorded steps of ``release`` decisions (a store that never heard s0 makes none)."""
    return sorted(str(r["step"]) for r in rows(
        data_dir, "SELECT step FROM governance_events WHERE decision = 'release'"))


async def test_erasure_alone_replays_equal(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    await _erased_after(s, ())
    assert current_statements(s.data_dir) == [COFFEE, TEA]
    await replayed_equal(s, tmp_path / "replay")


async def test_erasure_after_a_review_round_trip_replays_equal(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    await _erased_after(s, ("reject", "approve"))
    assert current_statements(s.data_dir) == [COFFEE, TEA]
    # actual: ["applied", "decided", "evaluated"] — R outlives the erasure
    assert _releases(s.data_dir) == [], _releases(s.data_dir)
    await replayed_equal(s, tmp_path / "replay")  # actual: governance_events differ (R only in the source)
