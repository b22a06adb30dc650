"""A session summary that fitted the bundle whole is cut to one of its three points, with the budget unused.

Finding: since 4b9c227 ``build_bundle`` (altm/recall/context/_bundle.py:175-182) recompresses an item until its
whole block (header, ``"  > "`` prefixes, escapes) is within its share, whatever is left for the memories
after it. The share is an even split of what is left (``remaining // min(hits left, capacity)``), so an
ordinary multi-line memory whose quoting costs a few tokens more than its share is recompressed, and the
extractive compressor drops whole sentences (here two of three bullets for four tokens), although every memory
ranked after it fits whole in what is left: the tokens taken from it are simply not used.

Reproduction (LoCoMo-like content, budget 400, query "What did Nate go to?"): a session capsule of three
bullets (45 content tokens, block 122 with a 118-token share) ranked before two user messages. At ff2c11f all
three were shown whole in 366 tokens; now the capsule loses "Melanie ran a charity race for mental health on
Saturday." ("[1 sentences omitted]", its bullets run together on one line) and the bundle is 355 tokens: a
point of the summary left the context while 45 tokens of the budget stayed free. (With another query it keeps
one bullet of three.)

Expected: the share bounds what an item may take from the memories after it (the hostile case of
``test_bundle_quote_overhead.py``), not what it may use of the budget they leave: an ordinary memory that fitted
the bundle whole (every item after it fitting too) is still shown whole.
"""

from __future__ import annotations

from altm.recall.context import build_bundle
from altm.recall.retrieval import Hit

CAPSULE = ("Session summary:\n- Gina bought new running shoes for the marathon in May 2023.\n"
           "- Melanie ran a charity race for mental health on Saturday.\n"
           "- Nate went to a LGBTQ support group yesterday and it was so powerful.")
MESSAGES = ["Melanie signed up for a pottery class last weekend. Gina ran a charity race for mental health on "
            "Saturday. Joanna painted a lake sunrise last year.",
            "Melanie bought new running shoes for the marathon in May 2023. Melanie signed up for a pottery class "
            "last weekend."]


def _hit(i: int, content: str, *, capsule: bool = False) -> Hit:
    return Hit(memory_id=f"mem_{i:032x}", layer="L1" if capsule else "L0", kind="capsule" if capsule else "message",
               content=content, content_hash=f"{i:064x}", scope="acme/platform/dana/coder", session_id="s1",
               source_id=None, source_ids=[], role=None if capsule else "user",
               valid_from="2023-05-08T13:56:00+00:00", method="verbatim", trust_status="unverified",
               trust_reason=None, score=1.0 - i / 100, channels={"words": i + 1}, breakdown={})


def test_an_ordinary_summary_that_fits_whole_is_not_cut_for_its_quote_prefixes() -> None:
    hits = [_hit(0, CAPSULE, capsule=True), *(_hit(i, m) for i, m in enumerate(MESSAGES, start=1))]
    bundle = build_bundle(hits, query="What did Nate go to?", scope="acme/platform/dana/coder", session_id="s1",
                          preset="default", token_budget=400)
    cut = [(i.memory_id, i.text) for i in bundle.items if i.compressed]
    assert len(bundle.items) == 3 and not cut, (
        f"{cut} compressed though every memory fits whole (the bundle is {bundle.tokens} of 400 tokens)")
