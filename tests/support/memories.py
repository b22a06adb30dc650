"""Building small stores for retrieval tests through the real pipeline."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from altm.config import Settings
from altm.schemas import TurnEvent
from altm.services._open import app_for_runtime
from altm.services.protocol import MemoryApp
from altm.streams.runtime import EmbeddedRuntime


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
