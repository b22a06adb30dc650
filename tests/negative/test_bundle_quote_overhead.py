"""A memory of many short lines (or of ``<`` and ``>``) takes several shares of the bundle and evicts the rest.

Finding (red team, the context bundle as an attack surface): ``build_bundle`` (altm/recall/context/_bundle.py:143-157)
compresses an item's content to ``room`` (its share less its header), but then renders it with ``_quote``,
which prefixes every line with ``"  > "`` and turns ``&``, ``<`` and ``>`` into entities. None of that is
counted in ``room``: the block is only checked against everything left of the budget (``block_tokens >
remaining``), so the item keeps whatever its quoting costs, taken from the memories ranked after it.

Reproduction: a tool output of 300 lines ``"<"`` ranked first among five hits, budget 1000. Its fair share
is (1000 − 46) // 5 = 190 tokens (46: the frame); its block takes 591, and the fourth of four ordinary
memories (113 tokens each, all four fit without it) is dropped as "did not fit". At budget 600 it takes 331
tokens and evicts three of them.

Why it matters: any hostile input (a page of ``<br>`` lines, a log of one-character lines) can crowd the
user's real memories out of every bundle that recalls it, without ever being larger than its share as text.

Expected: an item's rendered block (header, quote prefixes and escapes included) stays within its share, as
the docstring promises ("each candidate gets a share of what is left"); the content is compressed further
when quoting would overflow, and the memories after it keep their room.
"""

from __future__ import annotations

import pytest

from altm.recall.context import build_bundle
from altm.recall.context._bundle import FOOTER, HEADER
from altm.recall.context._tokens import count_tokens
from altm.recall.retrieval import Hit


def _hit(i: int, content: str) -> Hit:
    return Hit(memory_id=f"mem_{i:032x}", layer="L0", kind="message", content=content, content_hash="ab" * 32,
               scope="acme/platform/dana/coder", session_id="s1", source_id=None, source_ids=[],
               role="tool" if i == 0 else "user", valid_from="2026-11-02T09:00:00+00:00", method="verbatim",
               trust_status="unverified", trust_reason=None, score=1.0 - i / 10, channels={"words": i + 1},
               breakdown={})


GOOD = [_hit(i, f"The billing export job number {i} finished at 09:{i:02d} with 120 rows written to the ledger "
                "and no warnings reported by the exporter.") for i in range(1, 5)]


@pytest.mark.parametrize("hostile", ["<\n" * 300, ">\n" * 300, "x\n" * 300, "<>" * 300])
@pytest.mark.parametrize("budget", [800, 1000])
def test_quoting_does_not_let_an_item_take_more_than_its_share(hostile: str, budget: int) -> None:
    hits = [_hit(0, hostile), *GOOD]
    alone = build_bundle(GOOD, query="billing export", scope="acme/platform/dana/coder", session_id="s1",
                         preset="default", token_budget=budget)
    bundle = build_bundle(hits, query="billing export", scope="acme/platform/dana/coder", session_id="s1",
                          preset="default", token_budget=budget)
    share = (budget - count_tokens(HEADER) - count_tokens(FOOTER) - 2) // len(hits)
    first = bundle.items[0] if bundle.items and bundle.items[0].memory_id == hits[0].memory_id else None
    taken = first.tokens if first is not None else 0
    assert taken <= share, f"the hostile item took {taken} tokens of a {share}-token share"
    kept = {i.memory_id for i in bundle.items}
    evicted = [i.memory_id for i in alone.items if i.memory_id not in kept]
    assert evicted == [], f"{len(evicted)} of {len(alone.items)} ordinary memories crowded out by quoting overhead"
