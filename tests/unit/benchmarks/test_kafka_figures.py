"""Review of kafka_ingest's figures (8347816): the L0 count the "searchable" time is read from."""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from altm.store import count_layer
from benchmarks.kafka_ingest import _l0_count
from tests.support.memories import store_with
from tests.support.turns import make_turn


async def test_two_workers_sharing_one_data_dir_count_each_l0_row_once(settings: Settings) -> None:
    """Without the embedder, run() gives every worker the same data dir: dirs == [tmp/data] * workers. The
    L0 count summed over that list counts every row once per worker, so with 2 workers "searchable" is taken
    when half the turns are stored (the README's 2-worker searchable figure, 513 turns/s)."""
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(i) for i in range(6)]):
        pass
    data = Path(s.data_dir)
    assert count_layer(data, "L0") == 6
    workers = 2
    dirs = [data for _ in range(workers)]  # run(): Path(tmp) / "data" for each worker when embedder == "none"
    assert _l0_count(dirs) == 6
