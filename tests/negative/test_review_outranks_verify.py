"""A reviewer's verdict outranks the verify stage's. Verify recomputes the verdicts of a whole subject group
whenever an atom of it changes; before, it sent one for a reviewed atom too and the writer stored it: an atom a
reviewer had rejected came back ``verified`` (by ``cross_verify``) as soon as the user said the same again, and
the rejected atom counted as the independent support that verified the new one; an approved atom was marked
``contradicted`` by the next conflicting statement, over the reviewer's approval."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = ("SELECT memory_id, content, trust_status, trust_method, lc_state FROM memories WHERE layer='L2' "
        "ORDER BY valid_from")


@pytest.mark.parametrize(("decision", "again", "kept"), [
    ("reject", "Yes, the deploy day is Tuesday as always.", "contradicted"),
    ("approve", "The deploy day is Thursday.", "verified"),
])
async def test_a_reviewed_atom_keeps_its_verdict_when_its_subject_is_verified_again(
        settings: Settings, tmp_path: Path, decision: str, again: str, kept: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, "Our deploy day is Tuesday.", session="s1")])
        await rt.run_until_idle()
        (first,) = rows(s.data_dir, _SQL)
        await app.review_decide(SCOPE, first["memory_id"], decision)
        await rt.run_until_idle()
        await rt.publish([make_turn(2, again, session="s2")])  # the same subject: verify judges the group again
        await rt.run_until_idle()
        reviewed, later = rows(s.data_dir, _SQL)
    assert reviewed["memory_id"] == first["memory_id"] and later["content"] == again
    assert (reviewed["trust_status"], reviewed["trust_method"]) == (kept, "ground_truth"), dict(reviewed)
    if decision == "reject":  # a rejected atom is no support: nothing else says the deploy day is Tuesday
        assert later["trust_status"] == "unverifiable", dict(later)
    else:  # the later statement conflicts with a reviewed one and no correction cue says it replaces it
        assert later["trust_status"] == "uncertain", dict(later)


async def test_no_processor_gives_a_ground_truth_verdict(settings: Settings) -> None:
    """A set_trust proposal claiming a reviewer's verdict (from anything that can publish proposals) is refused
    with its reason; the memory keeps its verdict."""
    from altm.core import SetTrustProposal, Trust, TrustMethod, TrustStatus, TrustVerdict
    from altm.pipeline.processors import proposal
    from altm.pipeline.writer import Writer
    from altm.store import ShardSet
    from tests.unit.pipeline.test_writer import N, _proposal, _record

    shards = ShardSet(settings.data_dir, N)
    try:
        writer = Writer(shards, settings)
        atom = await _proposal(1, "Our deploy day is Tuesday.")
        writer.apply(_record(atom, 0), N)
        spoof = proposal(SetTrustProposal, scope=SCOPE, processor="verify", cause=atom, verdict=TrustVerdict(
            memory_id=atom.memory.memory_id, trust=Trust(status=TrustStatus.VERIFIED, method=TrustMethod.GROUND_TRUTH,
                                                          confidence=1.0, reason="approved by reviewer")))
        (change,) = writer.apply(_record(spoof, 1), N).changes
        row = shards.get(_record(atom, 0).partition).memory_row(atom.memory.memory_id)
    finally:
        shards.close()
    assert change.status.value == "rejected" and "reviewer's" in (change.reason or ""), change
    assert row is not None and row["trust_method"] != "ground_truth"
