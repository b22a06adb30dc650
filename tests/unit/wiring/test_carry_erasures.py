"""What a replay carries of the source's erasures goes to the shard of its user's home, whatever the partition
counts: the review items an erasure removed went to the shard of the source's partition number before."""

from __future__ import annotations

from pathlib import Path

from altm.core import partition_for
from altm.store import ShardSet
from altm.wiring._replay import carry_erasures


def test_an_erased_review_item_is_carried_to_its_homes_shard(tmp_path: Path) -> None:
    home = next(f"t/w/u{i}" for i in range(100) if partition_for(f"t/w/u{i}", 4) != partition_for(f"t/w/u{i}", 2))
    source = ShardSet(tmp_path / "source", 4)
    target = ShardSet(tmp_path / "target", 2)
    try:
        with source.get(partition_for(home, 4)).transaction() as tx:
            tx.carry_erased_item("rej_0123", home, "prop_erase")
        source.close()
        carry_erasures(tmp_path / "source", target, pending=True)
        with target.get(partition_for(home, 2)).transaction() as tx:
            assert tx.item_erased("rej_0123", home)
    finally:
        target.close()
