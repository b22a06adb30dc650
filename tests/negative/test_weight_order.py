"""A memory's weight is a function of its use signals, whatever order they and its trust verdict came in.

Found by the randomized replay check with operations overlapping (seed 194): the weight counted a
contradiction (× 0.8) only when a use signal came after the verdict, since a verdict never weighed the memory
again; a compaction pass requested before a contradicting turn took effect after it in the replay, and the
same rejected fact weighed 1.0 in the source and 0.8 in the replay. Trust acts at recall, through its own
factor (contradicted 0.6), so the weight no longer counts it twice."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import ControlAction, ControlEvent
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.replay import assert_same_state
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

FRIDAY = "The release is on Friday."


async def test_a_compression_and_a_contradiction_give_one_weight_in_either_order(settings: Settings,
                                                                                 tmp_path: Path) -> None:
    s0 = settings.model_copy(update={"embedder": "none", "data_dir": tmp_path / "probe"})
    said, contradicting = make_turn(1, FRIDAY, session="s1"), make_turn(2, "The release is on Monday.", session="s2")
    async with store_with(s0, [said]) as (_, app):
        (atom,) = [r for r in app.list_memories(SCOPE, layer="L2") if r["content"] == FRIDAY]
    compress = ControlEvent(event_id="ctl_compress_idle", scope=SCOPE, timestamp=T0 + timedelta(days=40),
                            action=ControlAction.LIFECYCLE,
                            payload={"op": "compress", "levels": {str(atom["memory_id"]): 1}})
    dirs = await in_each_order(s0, tmp_path, [said], [("compressed-first", [compress, contradicting]),
                                                      ("contradicted-first", [contradicting, compress])])
    for data_dir in dirs:
        (row,) = rows(data_dir, "SELECT trust_status, lc_compression, lc_weight FROM memories WHERE memory_id=?",
                      (atom["memory_id"],))
        assert row["trust_status"] == "contradicted" and row["lc_compression"] == 1, row
    assert_same_state(dirs[0], dirs[1], "with the compression and the contradiction in the other order")
