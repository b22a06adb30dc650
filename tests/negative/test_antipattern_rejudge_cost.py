"""Storing an anti-pattern judges every summary again against *every* stored anti-pattern: cubic.

Red team rt20 (scaling): sessions of 5 turns, the first turn of each stating a new anti-pattern ("Don't use
pickle3 for the billing job because it corrupts data, use Postgres3."): 100 / 200 / 400 turns derived in
0.9 s / 4.4 s / 31.0 s (live, a session at a time: 1.2 s / 4.3 s / 24.8 s). When an anti-pattern is stored,
``summaries_judged_again`` (altm/pipeline/writer/ops/memory.py:160) judges each of the agent's capsules and scenes
and the user's facets (grows with the sessions) with ``guard.reasserts``, which compares it with every stored
anti-pattern (grows with them): S x A comparisons for each of A anti-patterns. The summaries were judged against
the older anti-patterns already (when stored, and when those were stored): only the new one is news."""

from __future__ import annotations

import orjson
import pytest

from altm.core import Settings
from altm.pipeline.writer import guard as guard_module
from altm.pipeline.writer.ops import memory as memory_ops
from tests.support.memories import running
from tests.support.turns import make_turn

SESSIONS = 24


async def test_new_anti_pattern_judges_summaries_against_itself_only(settings: Settings,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    compared = {"inside": 0, "rows": 0, "calls": 0}
    depth = {"n": 0}
    original_against = guard_module.WriteGuard._against
    original_again = memory_ops.summaries_judged_again

    def counting_against(self, tx, mem, patterns, **kw):  # type: ignore[no-untyped-def]
        if depth["n"]:
            compared["inside"] += len(patterns)
        return original_against(self, tx, mem, patterns, **kw)

    def counting_again(tx, scope, proposal_id, ctx, *rest):  # type: ignore[no-untyped-def]
        compared["calls"] += 1
        # a scene is judged member atom by member atom: one comparison per member with the new anti-pattern
        compared["rows"] += sum(len(orjson.loads(r["evidence"])) if r["layer"] == "L3" else 1
                                for r in [*tx.summaries(scope), *tx.persona_facets(scope)])
        depth["n"] += 1
        try:
            return original_again(tx, scope, proposal_id, ctx, *rest)
        finally:
            depth["n"] -= 1

    monkeypatch.setattr(guard_module.WriteGuard, "_against", counting_against)
    monkeypatch.setattr(memory_ops, "summaries_judged_again", counting_again)
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with running(s) as rt:
        for j in range(SESSIONS):
            await rt.publish([
                make_turn(2 * j, f"Don't use tool{j} for the billing job because it corrupts data, use Postgres{j}.",
                          session=f"s{j}"),
                make_turn(2 * j + 1, f"The deploy of service{j} finished at 10:{j:02d} with 3 warnings.",
                          session=f"s{j}"),
            ])
            await rt.run_until_idle()
    assert compared["calls"] >= SESSIONS, compared  # each anti-pattern stored judged the summaries again
    # linear per anti-pattern: each summary judged against the anti-pattern just stored (one comparison a row)
    assert compared["inside"] <= compared["rows"], (
        f"{compared['inside']} summary x anti-pattern comparisons for {compared['calls']} anti-patterns stored "
        f"over {compared['rows']} summary rows: every summary is compared with every anti-pattern again")
