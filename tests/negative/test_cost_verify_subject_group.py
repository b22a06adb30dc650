"""Each atom of a subject makes verify propose a verdict for every atom of that subject again: quadratic records.

Red team rt22 (scaling): "The deadline is March 5, budget 3 dollars." said once a session, 40 / 80 / 160 sessions
(one turn derived at a time): 1,032 / 3,692 / 13,812 records on altm.proposals and as many on altm.changes
(0.79 / 2.6 / 9.3 MB each), nearly all ``set_trust`` ``unchanged``; verify busy 0.16 / 0.95 / 4.5 s. When the
atoms agree ("The budget is due on Friday for item 7."), the verdict's reason counts the agreeing atoms ("79 other
memories about 'budget' agree"), so each new atom *commits* a new verdict on every other one: 820 / 3,240 / 12,880
committed ``set_trust`` changes and audit rows, altm.changes 1.7 / 6.1 / 23.1 MB, 1.7 / 5.7 / 17.1 s.
- ``VerifyProcessor.process`` (altm/pipeline/processors/verify.py:201) reads the whole subject group
  (``atoms_with``) for each atom, ``cross_verify`` (verify.py:110) is quadratic in the group, and verify.py:209-213
  proposes a verdict for every member, changed or not.
- the "support" reason (verify.py:161) names how many agree, so every member's verdict changes with each new one.
"""

from __future__ import annotations

import orjson

from altm.core import Settings
from tests.support.memories import running
from tests.support.turns import make_turn

SAYINGS = 30


async def _trust_records(settings: Settings, line: str) -> tuple[int, int]:
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with running(s) as rt:
        for i in range(SAYINGS):
            await rt.publish([make_turn(i, line.format(i=i, d=1 + i % 28), session=f"s{i}")])
            await rt.run_until_idle()
        proposed = sum(1 for r in await rt.log.read_all(["altm.proposals"])
                       if orjson.loads(r.value).get("op") == "set_trust")
        committed = sum(1 for r in await rt.log.read_all(["altm.changes"])
                        if (c := orjson.loads(r.value)).get("op") == "set_trust" and c.get("status") == "committed")
    return proposed, committed


async def test_verdicts_proposed_stay_linear_in_the_atoms_of_a_subject(settings: Settings) -> None:
    proposed, _ = await _trust_records(settings, "The deadline is March {d}, budget {i} dollars.")
    assert proposed >= SAYINGS  # every atom was judged
    assert proposed <= 3 * SAYINGS, (
        f"verify proposed {proposed} verdicts for {SAYINGS} atoms of one subject: every new atom re-proposes a "
        "verdict for every earlier one, changed or not")


async def test_an_agreeing_atom_does_not_rewrite_every_verdict_of_its_subject(settings: Settings) -> None:
    _, committed = await _trust_records(settings, "The budget is due on Friday for item {i}.")
    assert committed >= SAYINGS - 1
    assert committed <= 3 * SAYINGS, (
        f"{committed} committed verdict changes for {SAYINGS} agreeing atoms of one subject: the reason counts the "
        "atoms that agree, so each new one rewrites every other verdict")
