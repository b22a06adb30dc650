"""A superseded version said again (by a sibling agent, or by the same agent in one delivery) makes the next
correction target that superseded version: the writer refuses it ("already superseded"), a rejection lands in the
user's review queue, and the version the correction replaces stays current beside it.

Finding: the backward step of ``GovernProcessor._facet`` takes for the version before "the version said last before
this one" (altm/pipeline/processors/govern.py:199-201: ``said = norm(max(earlier, key=order).content)``), over
``kept`` — every atom of the topic not superseded. A restatement of an older version is in ``kept`` whenever it was
not merged into its first saying: a sibling agent's atom never is (``_merge_duplicates`` looks for duplicates in the
governed atom's own agent scope, ``reader.same_content(mem.scope, …)``, govern.py:156), and in one delivery the merge
is proposed in the same batch, so not applied when the correction is governed. With water (day 0), "water instead,
actually" (day 1, supersedes water), water again (day 2) and "tea now, actually" (day 3): the day-2 saying is the
last before tea, so tea's predecessor is the *water* facet — already superseded by "water instead" — and the writer
refuses the supersession (altm/pipeline/writer/ops/governance.py:56-57, code "conflict"). "Water instead" is never
superseded. Delivered one at a time by one agent, the day-2 water is merged into the day-0 one before tea comes, so
tea supersedes "water instead": the outcome depends on whether the turns came in one publish, and on which of the
user's agents heard the restatement (facets are one per user).

Reproduction: embedded runtime, no embedder, sessions s0..s3 on days 0..3. (a) the four turns of one agent delivered
one at a time; (b) the same four in one publish; (c) the day-2 turn said to a sibling agent of the same user,
delivered one at a time. Read the current L4 facets (``superseded_by`` NULL, not rejected) and the rejections.

Expected: in all three, "tea now, actually" is the only current facet version and no rejection is filed.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Scope, Settings, TurnEvent
from tests.support.facets import current_statements, rejection_reasons, said_on
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.turns import SCOPE

WATER = "I prefer water in the morning."
WATER_INSTEAD = "I prefer water in the morning instead, actually."
TEA = "I prefer tea in the morning now, actually."
SIBLING = SCOPE.model_copy(update={"agent_id": "reviewer"})


def _turns(restated_by: Scope) -> list[TurnEvent]:
    return [said_on(0, WATER), said_on(1, WATER_INSTEAD), said_on(2, WATER, restated_by), said_on(3, TEA)]


async def test_a_restatement_in_one_delivery_does_not_redirect_the_next_correction(settings: Settings,
                                                                                   tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    (apart,) = await in_each_order(s, tmp_path / "orders", [], [("apart", _turns(SCOPE))])
    assert current_statements(apart) == [TEA]
    assert rejection_reasons(apart) == []
    batch = s.model_copy(update={"data_dir": tmp_path / "batch"})
    async with store_with(batch, _turns(SCOPE)):  # one publish, in time order
        pass
    # actual: [TEA, WATER_INSTEAD] and "mem_… is already superseded by mem_…"
    assert current_statements(batch.data_dir) == [TEA], current_statements(batch.data_dir)
    assert rejection_reasons(batch.data_dir) == []


async def test_a_sibling_agents_restatement_does_not_redirect_the_next_correction(settings: Settings,
                                                                                  tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    (apart,) = await in_each_order(s, tmp_path / "orders", [], [("sibling", _turns(SIBLING))])
    # actual: [TEA, WATER_INSTEAD] and "mem_… is already superseded by mem_…"
    assert current_statements(apart) == [TEA], current_statements(apart)
    assert rejection_reasons(apart) == []
