"""The cycle book was bounded by a count (10,000 cycles), not by bytes: each entry kept the whole bundle returned,
which a caller sizes with ``token_budget`` (up to 200,000). Red team rt24: bundle JSON 18 KB / 172 KB / 810 KB
and about 66 KB / 297 KB / 1.25 MB kept a prepare at budgets 2,000 / 20,000 / 200,000: a full book some 7 GiB, one
tenant's to fill. The book keeps bundles up to a number of bytes now (the oldest let go first: a retried prepare
rebuilds a bundle it no longer holds from the cycle's memory ids)."""

from __future__ import annotations

from datetime import timedelta

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.turns import SCOPE, T0, make_turn

PREPARES = 5


async def test_the_cycle_book_holds_a_bounded_number_of_bytes(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    line = "zebra crossing log line with numbers 12345 and more words here. "
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1000 + i, f"Zebra report {i}: " + line * 600, session="live") for i in range(30)])
        await rt.run_until_idle()
        book = app.protocol.cycles
        book.bundle_bytes_kept = 1_000_000
        prepared = []
        for j in range(PREPARES):
            prepared.append(await app.prepare_turn(SCOPE, "live", f"q{j}", f"zebra report numbers {j}?", 200_000,
                                                   timestamp=T0 + timedelta(days=1, minutes=j)))
        held = [b for _, b in book._recent.values() if b is not None]
        size = sum(len(b.rendered) + sum(len(i.text) for i in b.items) for b in held)
        assert size <= 1_000_000, f"{len(held)} bundles of {PREPARES} kept, {size:,} bytes"
        assert held and held[-1] == prepared[-1].bundle  # the newest is kept
        # a retry of the first, whose bundle the book let go, is rebuilt from its memory ids
        again = await app.prepare_turn(SCOPE, "live", "q0", "zebra report numbers 0?", 200_000,
                                       timestamp=T0 + timedelta(days=1))
    assert again.cycle_id == prepared[0].cycle_id
    assert again.bundle.memory_ids == prepared[0].bundle.memory_ids
