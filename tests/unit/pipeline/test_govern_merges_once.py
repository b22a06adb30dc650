"""A statement said again and again is merged once per duplicate, not once per duplicate and later saying.

Found by the operability red team (2026-12-07): 1,800 turns in which each user restated one line took 8 min 44 s
and 454,565 records to derive. Govern proposed, for each new exact duplicate, a merge of every duplicate of the
group not merged yet, and those proposed earlier in the same batch were not applied yet (a batch's proposals are
applied after it): n restatements in one batch made n(n-1)/2 merges, each applied (unchanged) and published."""

from __future__ import annotations

import orjson

from altm.core import Settings
from tests.support.memories import running
from tests.support.turns import make_turn

LINE = "Don't use Flask for the billing service because it blocks, use FastAPI."


async def test_each_duplicate_is_merged_once(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with running(s) as rt:
        await rt.publish([make_turn(i, LINE, session=f"s{i}") for i in range(1, 31)])
        await rt.run_until_idle()
        proposals = [orjson.loads(r.value) for r in await rt.log.read_all(["altm.proposals"])]
    merges = [(p["merge"]["duplicate_id"], p["merge"]["canonical_id"]) for p in proposals if p.get("op") == "merge"]
    assert merges, "the restatements were never merged"
    assert len(merges) == len(set(merges)), f"{len(merges)} merges proposed for {len(set(merges))} duplicates"
    assert len({c for _, c in merges}) <= 2  # each kind's duplicates fold into its first saying
