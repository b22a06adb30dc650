"""A persona facet held for another agent's anti-pattern quotes that anti-pattern in every agent's recall.

Finding: since a persona facet (L4) is judged against the anti-patterns of every agent of the user
(``WriteGuard.reasserts``, ``altm/pipeline/writer/guard.py``: ``tx.anti_patterns(scope, whole_user=...)``), a facet
held for review carries the guard's reason as its trust reason, and that reason quotes the anti-pattern's pattern
and why-bad (``f"re-asserts anti-pattern {mid} ({pattern!r}: {why})"``). The facet is recalled by every agent of the
user (``ScopePolicy``: L4 is not agent-bound) and a hit shows its trust reason (``Retriever._trust_reason``). So the
``writer`` agent's recall quotes what the user told the ``coder`` agent ("unpickling untrusted data runs code"),
an L2 atom of the coder that the writer's own recall never admits (L0-L3 are agent-bound). The rest of the pipeline
keeps a sibling agent's material out of an agent's view of a shared facet (``source_ids`` leaves out the sibling's
turns, the inspector its turns and evidence); the hold reason brings it back in.

Expected: an agent's recall of a facet held for another agent's anti-pattern does not quote that agent's atom: the
reason names no other agent's content (e.g. "may re-assert an anti-pattern of another agent of this user", or the
anti-pattern quoted only to the agent whose anti-pattern it is); the facet is still labelled ``uncertain``.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
ANTI = "Never use pickle for the session cache because unpickling untrusted data runs code."
PREF = "I prefer pickle for the session cache."


async def test_a_held_facet_does_not_quote_a_sibling_agents_anti_pattern(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for turn in (make_turn(1, ANTI, session="a1"), make_turn(2, PREF, scope=WRITER, session="b1")):
            await rt.publish([turn])
            await rt.run_until_idle()
        # the coder's atom is not the writer's to recall
        direct = app.search(WRITER, "b2", "unpickling untrusted data runs code").hits
        assert not [h for h in direct if "untrusted" in h.content], direct
        facets = [h for h in app.search(WRITER, "b2", "pickle for the session cache").hits if h.layer == "L4"]
        assert facets and all(h.trust_status == "uncertain" for h in facets), facets  # held, as decided
        quoted = [h.trust_reason for h in facets if "untrusted" in (h.trust_reason or "")]
        assert not quoted, f"the writer's recall quotes the coder's anti-pattern: {quoted}"
