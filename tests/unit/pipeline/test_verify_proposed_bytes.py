"""Verify's ``Proposed`` was bounded by subject groups (``SUBJECTS_KEPT``), not by members, and kept a full
``Trust`` per atom (red team rt24: about 1.3 KB a member: 1.3 / 13 / 134 MB for one subject of 1,000 / 10,000 /
100,000 atoms). It keeps a short digest of each verdict, and a bounded number of members in all."""

from __future__ import annotations

import gc
import tracemalloc
from datetime import UTC, datetime
from types import SimpleNamespace

from altm.core import Trust, TrustMethod, TrustStatus
from altm.pipeline.processors.verify import Proposed

ATOMS = 5_000


def _verdicts(members: list[SimpleNamespace]) -> dict[str, Trust]:
    return {m.memory_id: Trust(status=TrustStatus.UNCERTAIN, method=TrustMethod.CROSS_VERIFY, confidence=0.5,
                               contradicting_id=f"mem_{i + 1:032x}", verified_at=datetime.now(UTC),
                               reason="conflicts with an earlier memory about 'the deadline'; no correction "
                                      "cue, needs review") for i, m in enumerate(members)}


def test_a_large_subject_group_is_remembered_in_bounded_bytes() -> None:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    proposed = Proposed()
    members = [SimpleNamespace(memory_id=f"mem_{i:032x}", trust=Trust()) for i in range(ATOMS)]
    verdicts = _verdicts(members)
    proposed.changed(("acme/platform/dana/coder", "the deadline"), members, verdicts,  # type: ignore[arg-type]
                     all_of_them=False)
    del members, verdicts
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert kept <= 1024 * 1024, (
        f"one subject group of {ATOMS:,} atoms keeps {kept:,} bytes ({kept // ATOMS} a member) in verify's memory")


def test_the_members_remembered_in_all_are_bounded() -> None:
    proposed = Proposed(members_kept=1_000)
    for g in range(5):
        members = [SimpleNamespace(memory_id=f"mem_{g}_{i}", trust=Trust()) for i in range(400)]
        proposed.changed(("acme/platform/dana/coder", f"subject {g}"), members, _verdicts(members),  # type: ignore[arg-type]
                         all_of_them=False)
    assert proposed.members <= 1_000
    # stored as proposed: the group remembered last proposes nothing again, the one let go every member
    for g, expected in ((4, 0), (0, 400)):
        members = [SimpleNamespace(memory_id=f"mem_{g}_{i}", trust=Trust()) for i in range(400)]
        verdicts = _verdicts(members)
        for m in members:
            m.trust = verdicts[m.memory_id]
        again = proposed.changed(("acme/platform/dana/coder", f"subject {g}"), members, verdicts,  # type: ignore[arg-type]
                                 all_of_them=False)
        assert len(again) == expected, g


def test_a_group_larger_than_the_members_kept_is_remembered_alone() -> None:
    """The group judged now stays, however large (let go at once, each of its events proposed every member)."""
    proposed = Proposed(members_kept=100)
    members = [SimpleNamespace(memory_id=f"mem_big_{i}", trust=Trust()) for i in range(300)]
    verdicts = _verdicts(members)
    for m in members:
        m.trust = verdicts[m.memory_id]
    assert len(proposed.changed(("acme/platform/dana/coder", "big"), members, verdicts,  # type: ignore[arg-type]
                                all_of_them=False)) == 300
    assert len(proposed.changed(("acme/platform/dana/coder", "big"), members, verdicts,  # type: ignore[arg-type]
                                all_of_them=False)) == 0
