"""Every derived memory is judged against every anti-pattern of its agent: the guard's cost per memory grows with
the anti-patterns stored, whatever the memory says.

Red team rt22 (scaling): 20 / 40 / 80 anti-patterns stored, then 20 unrelated turns: 800 / 1,600 / 3,200
judgements (0.55 / 0.74 / 1.06 s). ``WriteGuard._anti_pattern`` (altm/pipeline/writer/guard.py:492) reads every
anti-pattern of the agent (``tx.anti_patterns``) and ``_against`` (guard.py:507) parsed and judged each one. Now
a pattern is judged only when the memory shares a content term (a clause's) or a token with it, or one text holds
the other (what ``matches`` and ``reassertion`` need to find anything; ``negated_about`` only lets a pattern go),
and each pattern is parsed once: 600 judgements → 0 here; every verdict of benchmarks/guard_paraphrase.py's four
labelled sets and of guard_fp.py's 8,265 sentences is the same.
"""

from __future__ import annotations

import pytest

from altm.core import Settings
from altm.pipeline.writer import guard
from tests.support.memories import embedded, runtime_of
from tests.support.turns import make_turn

LATER = 10


ANTI_PATTERNS = 30


async def test_a_memory_is_judged_against_the_anti_patterns_it_shares_words_with(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([make_turn(i, f"Don't use tool{i} for the cache{i} because it is slow, use json{i} instead.",
                                    session=f"a{i}") for i in range(ANTI_PATTERNS)])
        await rt.run_until_idle()
        judged = {"n": 0}
        original = guard.negated_about

        def counting(*args, **kw):  # type: ignore[no-untyped-def]
            judged["n"] += 1
            return original(*args, **kw)
        monkeypatch.setattr(guard, "negated_about", counting)
        for j in range(LATER):
            await rt.publish([make_turn(j, "We decided to deploy the billing service with Helm.", session=f"n{j}")])
            await rt.run_until_idle()
    assert judged["n"] <= 10 * LATER, (
        f"{judged['n']} memory/anti-pattern judgements for {LATER} turns that share no word with the "
        f"{ANTI_PATTERNS} anti-patterns: every derived memory is judged against every anti-pattern of its agent")
