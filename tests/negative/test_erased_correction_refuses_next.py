"""After a correction is erased, the next correction of the same subject, with another value, is refused as
"matches erased content": the user can no longer correct the subject at all.

"The launch deadline is Thursday." (s1), then "Actually, the launch deadline is Friday." (s2). The user erases
session s2 (or that message). Later (s3) they say "Actually, the launch deadline is Monday.": a new value, not
the erased one. The message is stored (L0), but its fact atom is refused by the write guard ("matches erased
content") and the capsule of s3 loses its "Corrections:" line: nothing derived says the deadline is Monday,
and the stale Thursday atom stays the only derived value.

Cause: the guard's "in other words" rule (``guard.restates_terms``: three shared canonical terms and 65 % of the
shorter text's) counts the correction cue "actually" as a content term (``_terms`` leaves stance words such as
"I prefer" or "we decided" out, not correction cues). Erased {actual, launch, deadlin, friday} and new
{actual, launch, deadlin, monday} share three of four, the cue and the subject, which is what any correction
of that subject says. The same Monday correction after an erased "The launch deadline is Friday." (no cue) is
stored (the control below), and so is "The launch deadline moved to Monday.".

Expected (README: derived memories are refused when they re-state or "say again in other words" what was
erased): a correction that gives the subject a value the erased message did not is not the erased content
coming back; it forms its atom and its capsule line.
"""

from __future__ import annotations

import pytest

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

NEW = "Actually, the launch deadline is Monday."


async def _after_erasing(settings: Settings, erased: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    async with embedded(settings) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "The launch deadline is Thursday.", "s1")
        await say(rt, 2, erased, "s2")
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        await say(rt, 3, NEW, "s3")
        derived = rows(settings.data_dir, "SELECT layer, content FROM memories WHERE session_id='s3' AND layer!='L0'")
        refused = rows(settings.data_dir, "SELECT reason FROM rejections")
    return derived, refused


@pytest.mark.parametrize("erased", ["Actually, the launch deadline is Friday.",  # the finding
                                    "The launch deadline is Friday."],  # control: passes today
                         ids=["erased-correction", "erased-plain-statement"])
async def test_a_new_correction_after_an_erased_one_forms_its_atom(settings: Settings, erased: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    derived, refused = await _after_erasing(s, erased)
    atoms = [d["content"] for d in derived if d["layer"] == "L2"]
    capsules = [str(d["content"]) for d in derived if d["layer"] == "L1"]
    assert atoms == [NEW], (derived, refused)
    assert len(capsules) == 1 and f"Corrections: {NEW}" in capsules[0], capsules
    assert refused == []
