"""A correction sent at the same time as what it corrects is decided by a hash: it supersedes nothing, and the
older statement is held for review to supersede the correction (red team of time as input).

Finding: which of two statements of one facet key is the newer is decided by ``order`` —
``(valid_from, memory_id)`` (``altm/pipeline/processors/facets.py:35-37``) — in ``GovernProcessor._facet``
(``altm/pipeline/processors/govern.py:183-191``: the predecessor is the greatest atom ordered before this
one). When the two atoms have the same valid time, the tie goes to the memory id, a hash of their content, so
"newer" is a coin flip. Hosts that only know when a session happened send all its messages with one
timestamp (the project's own LongMemEval loader does, ``benchmarks/longmemeval.py:57-70``; so does any
import of a chat export dated per conversation). For "I prefer dark mode in the editor." followed in the same
session by "I prefer light mode in the editor now, actually." (a correction cue), the correction's atom id
sorts first: when the correction is governed, the earlier statement does not count as earlier, so nothing is
superseded; when the earlier statement is governed with the correction already stored (both atoms came in one
batch), the correction counts as *its* predecessor, and a supersede of the correction by the stale statement
is held for review ("no model configured and no correction cue"). The
persona then shows both preferences as current, and approving the review item would replace the user's
correction with what it corrected. With timestamps one minute apart the same two messages give the right
result (the dark version superseded by the light one).

Reproduction: the two messages of session s1, both at 2023-05-08T13:56Z, turn ids s1-0 and s1-1, sent in
that order; read the L4 facets and held actions.

Expected: between statements of equal valid time, the one sent later is the newer (the order they were sent
in, e.g. the source turn's order): the dark-mode facet is superseded by the light-mode one, the light-mode
facet is the only current version, and no supersede is held for review.
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


async def test_a_correction_sent_at_the_same_time_supersedes_what_it_corrects(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [TurnEvent(scope=SCOPE, session_id="s1", turn_id=f"s1-{i}", role=Role.USER, content=text,
                       timestamp=SESSION_DATE) for i, text in enumerate([SAID, CORRECTED])]
    async with store_with(s, turns):
        pass
    facets = {("light" if "light" in str(r["content"]) else "dark"): r for r in rows(
        s.data_dir, "SELECT memory_id, content, superseded_by FROM memories WHERE layer = 'L4'")}
    assert set(facets) == {"dark", "light"}
    held = rows(s.data_dir, "SELECT action, reason, inputs FROM held_actions")
    # actual: nothing is superseded, and "supersede the light-mode facet by the dark-mode one" is held for review
    assert held == []
    assert facets["light"]["superseded_by"] is None
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"]
