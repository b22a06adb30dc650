"""Found by the randomized replay check with operations overlapping (seed 76, and 85, 93, 194 in some runs): a
retention pass was requested and, before any stage had run, the session's next turn was sent. The runtime
takes the searchable path first, so the writer stored the turn (its context: the message before it, which the
pass was to forget) before it applied the forget. A replay published the two in the order they were published,
and derived everything before the control event: it forgot first, and stored the turn without that context.
A replay now publishes each partition's host events in the order the source's writer applied the first thing
each of them caused (the proposals log says it; an event that caused nothing keeps its place). Since the
retention pass carries the turns offset it was sent at (``altm-turns-end``), the runtime no longer takes a turn
sent after it up before it: the pass is applied first, in the source as in the replay (the writer's order is
still what a replay follows for logs without that header)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import T0, make_turn


async def test_a_turn_the_writer_stored_before_a_forget_sent_earlier_replays_before_it(settings: Settings,
                                                                                       tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0})
    async with store_with(s, [make_turn(1, "Thanks, that helps a lot!", session="s3")]) as (rt, app):
        assert await app.admin.retention(T0 + timedelta(days=45)) >= 1  # not waited for
        await asyncio.sleep(0.01)  # a later millisecond: published after the pass, without a doubt
        await rt.publish([make_turn(2, "Priya owns the billing service and reviews every schema change.",
                                    session="s3")])
        await rt.run_until_idle()
    (priya,) = rows(s.data_dir, "SELECT context FROM memories WHERE content LIKE 'Priya%'")
    assert priya["context"] != "Thanks, that helps a lot!"  # stored after the forget, as it was sent
    assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE 'Thanks%'")  # then forgotten
    await replayed_equal(s, tmp_path / "replayed")
