"""Deferred work retried for long enough crashes its stage: the backoff overflows (red team of time as input).

Finding: ``altm/store/_work.py:43`` ``DeferredWork._backoff`` computes
``self.settings.defer_backoff_s * (2 ** max(0, attempts - 1))`` *before* capping it with
``min(..., defer_max_backoff_s)``. ``2 ** (attempts - 1)`` is an exact Python int; once ``attempts`` reaches
1025 it no longer fits a float, and the multiplication raises ``OverflowError: int too large to convert to
float``. ``DeferredWork.add`` (``_work.py:60``) calls it on every deferral, and the stage drivers call
``add`` through ``_defer`` (``altm/pipeline/_drivers.py:321``) from ``StageDriver.retry_due``
(``_drivers.py:375``) and ``WriterDriver._retry`` (``_drivers.py:667``). Nothing ever gives a deferred item
up (there is no attempt limit), so one record that keeps failing — a model outage, a model that always
answers one message with invalid output, a guard that cannot decide — is retried once an hour with the
default backoff (30 s doubling to ``ALTM_DEFER_MAX_BACKOFF_S`` = 3600 s) and reaches its 1025th deferral
after about 42 days; from then on ``retry_due`` raises on that item every time, before the items after it,
and the stage's retry never completes again (with ``ALTM_DEFER_BACKOFF_S=0`` it takes minutes).

Reproduction: a stage whose processor defers one turn every time; the item deferred 1,024 times (as ~42 days
of hourly retries would leave it), its next retry due; ``StageDriver.retry_due``.

Expected: the retry defers the item again (attempt 1,025) with the delay capped at
``defer_max_backoff_s``; ``retry_due`` returns normally and the item stays in the deferred work, due again
within the maximum backoff.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from altm.bus import OutgoingRecord
from altm.core import Event, Proposal, Settings, Topic, encode, partition_for, topic_name
from altm.core.errors import Deferred
from altm.pipeline._drivers import StageDriver
from altm.pipeline.processors import ProcessorContext
from altm.pipeline.processors._base import Processor
from altm.store import DeferredWork, ShardSet
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

DAYS_OF_HOURLY_RETRIES = 1024
"""Deferrals one item has had after ~42 days of a failure that does not go away (hourly retries)."""


class _AlwaysDeferred(Processor):
    name = "extract"
    input_topic = Topic.TURNS

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        raise Deferred("the model answered with invalid output again")


async def _nowhere(records: Sequence[OutgoingRecord]) -> None:
    assert not records


async def test_a_long_deferred_item_is_deferred_again_without_crashing_the_stage(settings: Settings) -> None:
    shards = ShardSet(settings.data_dir, settings.partitions)
    try:
        work = DeferredWork(shards, settings)
        turn = make_turn(1, "We deploy the billing service on Tuesdays.")
        part = partition_for(SCOPE.home, settings.partitions)
        topic = topic_name(Topic.TURNS, settings.topic_prefix)
        for _ in range(DAYS_OF_HOURLY_RETRIES):  # each retry of the last ~42 days deferred it again
            work.add("extract", topic, part, 0, SCOPE.home, encode(turn), "model answered with invalid output")
        shards.get(part)._db.execute("UPDATE deferred_work SET next_attempt_at = 0")  # its next hour has come
        driver = StageDriver(_AlwaysDeferred(), ProcessorContext(settings=settings), work, _nowhere)

        # actual: OverflowError: int too large to convert to float (2 ** 1024 * 30.0, before the cap)
        assert await driver.retry_due() == 0

        (kept,) = rows(settings.data_dir, "SELECT attempts, next_attempt_at FROM deferred_work")
        assert kept["attempts"] == DAYS_OF_HOURLY_RETRIES + 1
        assert kept["next_attempt_at"] <= time.time() + settings.defer_max_backoff_s + 1
    finally:
        shards.close()
