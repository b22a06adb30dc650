"""Of two corrections sent at one time, which is the newer is still decided by a hash of their content: the
user's last word is not the persona's current version.

Finding: this morning's fix for a correction dated as what it corrects (commit 2c25671) orders the atoms of one
facet key by ``(valid time, states a correction, memory id)`` (``order``, altm/pipeline/processors/facets.py:35-40;
used by ``GovernProcessor._facet``, altm/pipeline/processors/govern.py:183-191, and by verify,
altm/pipeline/processors/verify.py:112 and :226). That only tells a correction from a plain statement. Two
corrections of one time (a host that dates a session's messages with the session's time, the case the fix was
for) still tie on the first two fields, and the tie goes to the memory id, a hash of the content: "newer" is a coin
flip again. The order the messages were said in (their turn ids, which the conversation order of
altm/store/_conversation.py now reads naturally) is never consulted. For "I prefer dark mode in the editor."
(s1-0), "I prefer light mode in the editor now, actually." (s1-1), "I prefer dark mode in the editor again,
actually." (s1-2), the last correction's atom id sorts before the first's: the dark-again version supersedes only
the first statement, the light-mode version is superseded by nothing, and the persona shows light mode and dark
mode as the user's current preferences.

Reproduction: the three messages of session s1, all at 2023-05-08T13:56Z, turn ids s1-0 .. s1-2, sent in that
order (model-free, no embedder); read the L4 facets.

Expected: between atoms of equal valid time the one said later (its message's place in the conversation order:
turn id, naturally) is the newer, before the correction flag and the id decide: the dark version is superseded by
the light one, the light one by the dark-again one, and the dark-again facet is the only current version (no
supersede held for review). With times one minute apart that is what happens.
"""

from __future__ import annotations

from datetime import UTC, datetime

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

SESSION_DATE = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
SAID = "I prefer dark mode in the editor."
CORRECTED = "I prefer light mode in the editor now, actually."
CORRECTED_AGAIN = "I prefer dark mode in the editor again, actually."


async def test_of_two_corrections_said_at_one_time_the_later_said_is_current(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [TurnEvent(scope=SCOPE, session_id="s1", turn_id=f"s1-{i}", role=Role.USER, content=text,
                       timestamp=SESSION_DATE) for i, text in enumerate([SAID, CORRECTED, CORRECTED_AGAIN])]
    async with store_with(s, turns):
        pass
    facets = {str(r["content"]).partition(": ")[2]: r for r in rows(
        s.data_dir, "SELECT memory_id, content, superseded_by FROM memories WHERE layer = 'L4'")}
    assert set(facets) == {SAID, CORRECTED, CORRECTED_AGAIN}
    assert rows(s.data_dir, "SELECT action, reason FROM held_actions") == []
    # actual: the dark-again version supersedes the first statement, and the light-mode version stays current
    assert {text: r["superseded_by"] for text, r in facets.items()} == {
        SAID: facets[CORRECTED]["memory_id"],
        CORRECTED: facets[CORRECTED_AGAIN]["memory_id"],
        CORRECTED_AGAIN: None,
    }
