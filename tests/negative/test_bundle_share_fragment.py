"""A short memory is shown as a three-word fragment ("Jon went to [...]") where it used to be whole or absent.

Finding: ``build_bundle`` skips a memory whose room is under ``MIN_ITEM_TOKENS`` unless its whole content fits
(altm/recall/context/_bundle.py:160-161: a memory is shown whole or with a useful share, never as a scrap). The
loop added in 4b9c227 (lines 175-182) runs after that check: a 14-token message that fits its room whole, but
whose block overruns the share by its quote prefix, has its room cut again and again (``room * share //
block_tokens``, down to 1) and is compressed to what is left. At budget 132 the bundle's only memory, "Jon went to
a LGBTQ support group yesterday and it was so powerful.", is shown as "Jon went to [...]": 77 tokens of header
and quoting for three words that say nothing, an "injected" signal for a memory the model never saw, and an item
the agent may cite. Among eleven LoCoMo-like hits at budget 128 the bundle's one item is "Jon [...]" (at
ff2c11f both bundles held no item).

Expected: the loop keeps the rule the check above states: an item is shown whole, or compressed to at least
``MIN_ITEM_TOKENS`` of room, or not at all (omitted and counted in ``omitted``).
"""

from __future__ import annotations

import pytest

from altm.recall.context import build_bundle
from altm.recall.retrieval import Hit

MESSAGE = "Jon went to a LGBTQ support group yesterday and it was so powerful."


def _hit(content: str) -> Hit:
    return Hit(memory_id=f"mem_{7:032x}", layer="L0", kind="message", content=content, content_hash=f"{7:064x}",
               scope="acme/platform/dana/coder", session_id="s1", source_id=None, source_ids=[], role="user",
               valid_from="2023-05-08T13:56:00+00:00", method="verbatim", trust_status="unverified",
               trust_reason=None, score=1.0, channels={"words": 1}, breakdown={})


@pytest.mark.parametrize("budget", range(120, 141, 2))
def test_a_short_memory_is_shown_whole_or_not_at_all(budget: int) -> None:
    bundle = build_bundle([_hit(MESSAGE)], query="What did Jon go to?", scope="acme/platform/dana/coder",
                          session_id="s1", preset="default", token_budget=budget)
    shown = [i.text for i in bundle.items]
    assert shown in ([], [MESSAGE]), f"budget {budget}: the 14-token memory is shown as {shown}"
