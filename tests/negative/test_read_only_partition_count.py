"""Finding: the read-only commands (``altm query``, ``altm memories --scope``, ``review list``, ``governance
list``, ...) take an explicit ``ALTM_PARTITIONS`` as given, even when the data dir's log says otherwise, and answer
"nothing stored" for users whose memories are on disk.

``resolve`` (altm/wiring/_adapters.py:98) keeps the log's partition count only when ``partitions`` was not set
explicitly; an explicit value is used as is. A writing command then refuses at once — the runtime's
``ensure_topics`` (altm/bus/embedded/_log.py:120) says "topic 'altm.turns' exists with 8 partitions, not 4 ... use
a fresh data dir to change it" — but ``open_read_only`` (altm/wiring/_deployment.py:283-291) never starts the
bus nor compares the count with the log, and opens ``ShardSet(data_dir, 4)`` (altm/wiring/_deployment.py:196):
``partition_for(home, 4)`` sends the user to a shard that holds other users' memories and none of theirs, and
the command exits 0 with no result. An operator whose shell or env file still carries ``ALTM_PARTITIONS`` of
another deployment (the compose file sets 8, the default is 4) is told a user has no memory.

Reproduction: store a fact of user ``u1`` in a data dir made with ``partitions=8`` (``u1`` is on partition 6 of
8, partition 2 of 4); run ``altm query "billing deploy" --scope acme/platform/u1/coder --json`` with
``ALTM_PARTITIONS=4``.

Expected: the read-only commands refuse a partition count that differs from the data dir's log, as writers do
(exit code != 0, a message naming the partition count), or use the log's count; never exit 0 with an empty
answer while the user's memories are stored.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from altm.core import Settings, partition_for
from altm.interfaces.cli import app
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

runner = CliRunner()
USER = SCOPE.model_copy(update={"user_id": "u1"})


async def _store(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir, partitions=8, embedder="none")
    async with store_with(settings, [make_turn(1, "We deploy the billing service on Tuesdays.", scope=USER)]):
        pass


def test_query_with_another_partition_count_is_refused_or_finds_the_memory(tmp_path: Path) -> None:
    assert partition_for(USER.home, 8) != partition_for(USER.home, 4)
    asyncio.run(_store(tmp_path))
    args = ["query", "billing deploy", "--data-dir", str(tmp_path), "--scope", USER.path, "--json"]
    same = runner.invoke(app, args, env={"ALTM_EMBEDDER": "none"})
    assert same.exit_code == 0 and json.loads(same.output)["results"], same.output

    other = runner.invoke(app, args, env={"ALTM_EMBEDDER": "none", "ALTM_PARTITIONS": "4"})
    if other.exit_code != 0:
        assert "partition" in other.output.lower(), f"refused without naming the mismatch: {other.output!r}"
        return
    results = json.loads(other.output)["results"]
    assert results, ("`altm query` with ALTM_PARTITIONS=4 on a data dir whose log has 8 partitions exited 0 with no "
                     "result: the user's memory is on another shard")


def test_memories_listing_with_another_partition_count_is_refused_or_complete(tmp_path: Path) -> None:
    asyncio.run(_store(tmp_path))
    args = ["memories", "--data-dir", str(tmp_path), "--scope", USER.path, "--json"]
    same = runner.invoke(app, args, env={"ALTM_EMBEDDER": "none"})
    assert same.exit_code == 0 and json.loads(same.output), same.output

    other = runner.invoke(app, args, env={"ALTM_EMBEDDER": "none", "ALTM_PARTITIONS": "4"})
    if other.exit_code != 0:
        assert "partition" in other.output.lower(), f"refused without naming the mismatch: {other.output!r}"
        return
    assert json.loads(other.output) == json.loads(same.output), (
        "`altm memories --scope` with ALTM_PARTITIONS=4 on an 8-partition data dir lists another shard's view")
