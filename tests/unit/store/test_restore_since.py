"""A rollback restores a memory's columns that nobody changed since the decision, a group of them whole
(``altm.store.changed_since``): what a later change set stands, and a merge undone takes its ``merged`` state
with it even when the lifecycle changed since (an erasure that took use signals tallies a merged duplicate
again, keeping it ``merged``)."""

from __future__ import annotations

from pathlib import Path

from altm.store import MemoryRow, Shard
from tests.support.atoms import AT, atom_row


def _restored(tmp_path: Path, decision: dict[str, object], since: dict[str, object]) -> MemoryRow:
    """The atom changed by ``decision`` (proposal p-decision), then by ``since``, then the decision rolled back."""
    shard = Shard(tmp_path / "s.db", 0).open()
    try:
        row = atom_row("The release is on Friday.")
        with shard.transaction() as tx:
            tx.insert_memory(row, at=AT.isoformat(), proposal_id="p-insert", actor="extract")
            decided: MemoryRow = {**row, **decision}  # type: ignore[typeddict-item]
            tx.update_memory(row, decided, at=AT.isoformat(), proposal_id="p-decision", actor="govern")
            later: MemoryRow = {**decided, **since}  # type: ignore[typeddict-item]
            tx.update_memory(decided, later, at=AT.isoformat(), proposal_id="p-later", actor="writer")
            (entry,) = tx.decision_audit("p-decision")
            tx.restore(entry, at=AT.isoformat(), proposal_id="p-undo")
            found = tx.memory_row(row["memory_id"])
        assert found is not None
        return found
    finally:
        shard.close()


def test_a_merge_undone_goes_whole_though_the_lifecycle_changed_since(tmp_path: Path) -> None:
    row = _restored(tmp_path, {"superseded_by": "mem_canonical", "lc_state": "merged"}, {"lc_injected": 2})
    assert (row["superseded_by"], row["lc_state"], row["lc_injected"]) == (None, "active", 2)


def test_a_demotion_undone_keeps_a_supersession_and_a_pin_made_since(tmp_path: Path) -> None:
    row = _restored(tmp_path, {"lc_state": "demoted", "lc_weight": 0.5, "lc_harmful": 1},
                    {"superseded_by": "mem_newer", "valid_to": AT.isoformat(), "lc_pinned": 1})
    # the lifecycle group changed since (the pin): it stays whole (the rollback op tallies the signals left)
    assert (row["superseded_by"], row["lc_pinned"], row["lc_state"]) == ("mem_newer", 1, "demoted")


def test_columns_nobody_changed_since_come_back(tmp_path: Path) -> None:
    row = _restored(tmp_path, {"lc_state": "demoted", "lc_weight": 0.5, "content": "The release is on Monday."},
                    {"trust_status": "verified", "trust_method": "corroboration"})
    assert (row["lc_state"], row["lc_weight"], row["content"]) == ("active", 1.0, "The release is on Friday.")
    assert (row["trust_status"], row["trust_method"]) == ("verified", "corroboration")  # a verdict given since
