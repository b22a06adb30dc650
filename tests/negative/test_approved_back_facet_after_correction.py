"""A facet approved back after a later correction is current beside the correction (red-team review of the
approval that brings facets back: ``_facets_of`` / ``facet_recited``).

What a user expects: "I prefer dark mode in every editor." (session a); a reviewer rejects its atom, so the dark
facet leaves recall. Later the user says "I prefer light mode in the editor now, actually." (session b): a light
facet, nothing to supersede (the only earlier atom is rejected). The reviewer then approves the dark atom after
all: the store should now be what it is when nothing was ever rejected: the dark facet superseded by the light
correction (govern supersedes the latest earlier unrejected version: altm/pipeline/processors/govern.py
``_facet``), one current editor-mode preference. Actual: the approval puts the dark facet back in recall with
the state its weight gives and no supersession, so ``list_memories(layer="L4")`` holds both "dark" and "light"
as current: the profile contradicts itself, and it depends on whether a review came before or after the
correction.
Suspected cause: altm/pipeline/writer/ops/governance.py ``_facets_following`` (approve branch: ``{**
without_verdict(standing), "lc_state": state_by_weight(...)}``) never looks for a later version of the facet's
key that superseded it in the meantime (nor does govern run again for the approved atom).
Fix direction: on approval, supersede the restored facet by the latest later version of its ``facet_key``
(or re-run govern's facet step for the approved atom)."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."


async def _current(s: Settings, *, review: bool) -> list[str]:
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, DARK, "a")
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (DARK,))
        if review:
            await app.review_decide(SCOPE, atom["memory_id"], "reject")
            await rt.run_until_idle()
        await say(rt, 3, LIGHT, "b")
        if review:
            await app.review_decide(SCOPE, atom["memory_id"], "approve")
            await rt.run_until_idle()
        return sorted(r["content"] for r in app.list_memories(SCOPE, layer="L4"))


async def test_the_approved_facet_stays_superseded_by_the_correction(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    never = await _current(s.model_copy(update={"data_dir": tmp_path / "never"}), review=False)
    assert never == [f"Preference (mode editor): {LIGHT}"], never
    # actual: both the dark and the light facet current
    assert await _current(s, review=True) == never
