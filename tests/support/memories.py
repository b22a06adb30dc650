"""Building small stores for retrieval tests through the real pipeline."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from altm.app.protocol import MemoryApp
from altm.core import TurnEvent
from altm.core.settings import Settings
from altm.pipeline.runtime import EmbeddedRuntime
from altm.wiring._open import app_for_runtime


@asynccontextmanager
async def store_with(settings: Settings, turns: Sequence[TurnEvent]) -> AsyncIterator[tuple[EmbeddedRuntime,
                                                                                              MemoryApp]]:
    runtime = EmbeddedRuntime(settings)
    await runtime.start()
    try:
        await runtime.publish(list(turns))
        await runtime.run_until_idle()
        yield runtime, app_for_runtime(runtime)
    finally:
        await runtime.stop()
