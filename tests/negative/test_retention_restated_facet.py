"""Retention takes a persona facet's first atom and leaves the facet unsupported, though the user restated it.

A persona facet (L4) cites the earliest atom of its statement (``govern._facet``: "the same statement made in
several sessions is one facet version, cited from its first atom"); a later re-statement by the same agent
merges into that atom, one by another agent stays an atom of its own. When retention forgets the first atom
(``ALTM_RETENTION_DAYS_L2``), ``ops/lifecycle._repair_evidence`` strips it from the facet and, nothing being
left, flags the facet ``evidence_forgotten`` and holds it for review ("its evidence was forgotten by the
retention policy"), while the user's re-statement 10 days old — within retention, and still stored (released
from the merge, or another agent's atom) — makes the same facet. Nothing proposes the facet again from the
atoms left, as is done for scenes (computed again from the atoms left) and for exact duplicates (folded into
the earliest left). With L4 retention set as well, the facet (valid from the first statement) is forgotten in
the same pass and never formed again: the persona loses a preference the user restated 10 days earlier.

Expected: after the pass the facet stands on the atoms left — current, citing the re-statement, not flagged
and not held for review; with L4 retention too, the persona still has the preference (a current L4 facet
formed from the re-statement).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import orjson
import pytest

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DARK = "I prefer dark mode in every editor."
PASS = T0 + timedelta(days=90)
_ATOMS = "SELECT memory_id FROM memories WHERE layer='L2' AND superseded_by IS NULL"
_FACETS = ("SELECT memory_id, evidence, trust_status, attributes FROM memories "
           "WHERE layer='L4' AND superseded_by IS NULL")


async def _restated_then_retained(settings: Settings, agent: str) -> tuple[list[str], list[dict[str, Any]]]:
    """DARK said by coder at T0 and again by ``agent`` at T0 + 80 days, then a retention pass at T0 + 90 days:
    the current atoms and facets left."""
    restated = make_turn(2, DARK, session="b", scope=SCOPE.model_copy(update={"agent_id": agent}))
    turns = [make_turn(1, DARK, session="a"), restated.model_copy(update={"timestamp": T0 + timedelta(days=80)})]
    async with store_with(settings, turns) as (rt, app):
        await app.admin.retention(PASS)
        await rt.run_until_idle()
    return [str(r["memory_id"]) for r in rows(settings.data_dir, _ATOMS)], rows(settings.data_dir, _FACETS)


@pytest.mark.parametrize("agent", ["coder", "reviewer"])
async def test_a_facet_whose_first_atom_retention_forgot_stands_on_the_restatement(
        settings: Settings, agent: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0})
    atoms, facets = await _restated_then_retained(s, agent)
    assert len(atoms) == 1, atoms  # the re-statement, within retention
    (facet,) = facets
    attributes = orjson.loads(facet["attributes"])
    assert orjson.loads(facet["evidence"]) == atoms and not attributes.get("evidence_forgotten") \
        and facet["trust_status"] != "uncertain", ("the facet was held for review as unsupported", facet)


@pytest.mark.parametrize("agent", ["coder", "reviewer"])
async def test_the_persona_keeps_a_preference_restated_within_retention(settings: Settings, agent: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0, "retention_days_l4": 30.0})
    atoms, facets = await _restated_then_retained(s, agent)
    assert len(atoms) == 1, atoms
    assert [orjson.loads(f["evidence"]) for f in facets] == [atoms], ("no persona facet for a preference restated "
                                                                      "10 days before the pass", facets)
