"""Erasing an agent leaves what it heard in the clear in the audit log of a sibling agent's held action.

The user tells the ``coder`` agent "I prefer dark mode in every editor." (session a1), and later tells the
``writer`` agent "I prefer light mode in every editor." (b1). The persona facet (L4) is the user's: govern holds
the supersede of the coder's facet by the writer's for review (no correction cue), a held action in the
writer's scope whose ``inputs`` quote both facets ("old": "... I prefer dark mode in every editor."), and
records the hold as a governance decision with the same inputs.

The coder agent is erased. The held action and the decision name the erased facet, so the erasure deletes them
(``_drop_held_actions_naming`` / ``_drop_decisions_naming``, altm/store/_shard_tx.py:1214-1230), and the shard's
tables no longer hold "dark mode". But the audit log does, in the clear:

* the held action's insert row (actor ``govern``, ``new_value`` with the inputs) is never redacted: the erasure
  redacts earlier audit values of the erased *memories* (``redact_audit("memories", ...)``) but not of the held
  actions and decisions it deletes because they quote them;
* the erasure's own audit rows of those deletions keep ``inputs`` (and ``reason``) as they were:
  ``_erase_row`` audits ``redacted(row)``, whose ``_TEXT_FIELDS`` (altm/store/_redaction.py:11) lack
  ``inputs``.

What a user expects (README, Trust and erasure): the writer "removes the content and everything derived from it
... and audits every deletion; earlier audit values about the erased rows are redacted to their SHA-256 (the
audit rows themselves stay)", and "held-action and governance inputs that named them are replaced by their
hashes". After the coder is erased, the coder's words are nowhere in the shard in the clear.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
DARK, LIGHT = "I prefer dark mode in every editor.", "I prefer light mode in every editor."


async def test_an_erased_agents_words_leave_the_audit_of_a_sibling_agents_held_action(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, DARK, session="a1"), make_turn(2, LIGHT, scope=WRITER, session="b1")]
    async with store_with(s, turns) as (rt, app):
        held = rows(s.data_dir, "SELECT agent_id, inputs FROM held_actions")
        assert held and "dark mode" in held[0]["inputs"]  # the supersede is held, quoting the coder's facet
        await app.erase(SCOPE, "agent")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%dark mode%'") == []
    assert rows(s.data_dir, "SELECT 1 FROM held_actions WHERE inputs LIKE '%dark mode%'") == []
    assert rows(s.data_dir, "SELECT 1 FROM governance_events WHERE inputs LIKE '%dark mode%'") == []
    left = rows(s.data_dir, "SELECT audit_id, actor, action, target_table, redacted FROM audit_log "
                            "WHERE old_value LIKE '%dark mode%' OR new_value LIKE '%dark mode%'")
    assert left == [], f"audit rows that keep the erased coder's words in the clear: {left}"
