"""Finding: changing ``ALTM_TOPIC_PREFIX`` on an existing embedded data dir silently resets its partition count
to the default, and most users are then routed to shards that do not hold their memories.

``resolve`` (altm/wiring/_adapters.py:99-103) keeps an existing log's partition count by looking up the turns
topic under the prefix *now configured* (``f"{prefix}turns"``). With a new prefix that topic does not exist yet,
so the data dir's count (here 8) is dropped and ``Settings.partitions``' default (4) applies. The runtime's
``ensure_topics`` (altm/bus/embedded/_log.py:114) only refuses a count that differs for a topic of the same name,
so it creates the new prefix's topics with 4 partitions without a word, and ``ShardSet`` (opened with 4,
altm/wiring/_deployment.py:196) routes every user by ``partition_for(home, 4)``: users whose partition changed
(5 of the 8 below) find no memory at all, and what they say next is written beside other users' shards of the
old layout. Changing the prefix is meant to be possible (README: "a changed ALTM_TOPIC_PREFIX no longer leaves
a partition publishing to topics nobody reads", commit 45fc929), and README says the partition count is "fixed
when a data dir ... is created".

Reproduction: store one fact for each of 8 users in a data dir made with ``partitions=8``; open the same data dir
with ``ALTM_TOPIC_PREFIX=prod.`` and nothing else changed; list each user's memories.

Expected: the data dir keeps its partition count (8) whatever the prefix, so every user still finds their
memories; or, at the least, the deployment refuses to open with a message that names the partition count /
prefix mismatch. Never an open deployment that answers "nothing stored" for users whose memories are on disk.
"""

from __future__ import annotations

from pathlib import Path

from altm.bus import BusError
from altm.core import Settings, partition_for
from altm.pipeline import LogBindingError
from altm.store import DataDirError
from altm.wiring import WiringError
from tests.support.memories import embedded, store_with
from tests.support.turns import SCOPE, make_turn

USERS = [SCOPE.model_copy(update={"user_id": f"u{i}"}) for i in range(8)]
REFUSALS = (WiringError, BusError, LogBindingError, DataDirError)


async def test_a_new_topic_prefix_keeps_the_data_dirs_partition_count(tmp_path: Path) -> None:
    moved = [s.user_id for s in USERS if partition_for(s.home, 8) != partition_for(s.home, 4)]
    assert moved, "the test needs users whose partition differs between 8 and 4 partitions"
    turns = [make_turn(i, f"We deploy billing service number {i} on Tuesdays.", scope=s) for i, s in enumerate(USERS)]
    first = Settings(data_dir=tmp_path, partitions=8, embedder="none")
    async with store_with(first, turns) as (_, app):
        before = {s.user_id: len(app.list_memories(s)) for s in USERS}
    assert all(before.values()), before

    renamed = Settings(data_dir=tmp_path, topic_prefix="prod.", embedder="none")
    try:
        async with embedded(renamed) as deployment:
            partitions = deployment.settings.partitions
            after = {s.user_id: len(deployment.app.list_memories(s)) for s in USERS}
    except REFUSALS as exc:  # a refusal that says why is acceptable too
        text = str(exc).lower()
        assert "partition" in text or "prefix" in text, f"refused without naming the mismatch: {exc}"
        return
    lost = [u for u, n in after.items() if n == 0]
    assert partitions == 8 and not lost, (
        f"with ALTM_TOPIC_PREFIX changed the data dir opened with {partitions} partitions (made with 8): users "
        f"{lost} find none of their memories (before: {before}, after: {after})")
