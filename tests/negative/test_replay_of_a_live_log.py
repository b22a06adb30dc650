"""A replay of a log that is still being written rebuilds a state its source never had: control events are read
later than the turns they act on.

Finding: ``read_host_records`` (altm/app/replay.py:55-64) reads the turns topic "up to its current end" with one
``bus.read_all`` call and only then, with another, the control topic (and after that the proposals log). Nothing
fixes one cut for both: no end offsets are taken before reading, and no publish time bounds the second read by
the first. A host keeps talking while ``altm replay`` runs (a Kafka deployment is replayed beside its workers:
README, "Re-derivation: altm replay --broker ... [--cache-from WORKER_DATA_DIR]"; reading a large turns topic
takes a while), so a turn published after the turns were read is left out while a control event about it (a
pin, a review, a rollback, a retention pass, a cycle's commit citing it) published just after it is read and
replayed. The writer refuses that control event ("no signalled memory ..."), and the rebuilt data dir holds a
rejection, pending review, that the source never made at any point of its history: a state that is no prefix of
the log, which the replay reports as a complete rebuild.

Reproduction: an embedded data dir with one message; replay it while, right after the replay has read the turns
topic, the host says a second message and pins it (``app.feedback(..., "pin")``), each derived until idle (the
test wraps ``SealedBus.read_all`` to run the host's traffic between the two reads).

Expected: the replay rebuilds the log as of one point: the second message and its pin both, or neither. The
source refused nothing, so the rebuilt data dir has no rejection, and a message it holds that was pinned in the
source is pinned. (E.g. take the end offsets of the host topics, and of the proposals log, before reading any
of them, and read each only up to them.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from altm.bus import Record
from altm.bus.sealing import SealedBus
from altm.core import Settings
from altm.wiring import replay_into
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

PINNED = "We deploy the billing service on Tuesdays after the freeze."


async def test_a_replay_beside_a_live_host_rebuilds_one_point_of_the_log(settings: Settings, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "Priya owns the billing service.", session="s1")]) as (rt, app):
        read_all = SealedBus.read_all
        talked: list[str] = []

        async def read_while_the_host_talks(self: SealedBus, topics: Sequence[str], *, from_offset: int = 0,
                                            from_time_ms: int | None = None,
                                            keep_shredded: bool = False) -> list[Record]:
            out = await read_all(self, topics, from_offset=from_offset, from_time_ms=from_time_ms,
                                 keep_shredded=keep_shredded)
            if list(topics) == [f"{s.topic_prefix}turns"] and not talked:  # the host, between the two reads
                await rt.publish([make_turn(2, PINNED, session="s1")])
                await rt.run_until_idle()
                (message,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content=?",
                                  (PINNED,))
                await app.feedback(SCOPE, [str(message["memory_id"])], "pin")
                await rt.run_until_idle()
                talked.append(str(message["memory_id"]))
            return out

        monkeypatch.setattr(SealedBus, "read_all", read_while_the_host_talks)
        await replay_into(s.data_dir, tmp_path / "replayed", settings=s)
        monkeypatch.undo()
    assert talked
    assert rows(s.data_dir, "SELECT 1 FROM rejections") == []
    assert rows(s.data_dir, "SELECT lc_pinned FROM memories WHERE memory_id=?", (talked[0],)) == [{"lc_pinned": 1}]
    refused = rows(tmp_path / "replayed", "SELECT reason FROM rejections")
    assert refused == [], f"the replay refused what its source applied: {refused}"
    pinned = rows(tmp_path / "replayed", "SELECT lc_pinned FROM memories WHERE memory_id=?", (talked[0],))
    assert pinned in ([], [{"lc_pinned": 1}]), pinned
