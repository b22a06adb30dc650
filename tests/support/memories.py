"""Building small stores for tests through the real pipeline (an embedded deployment)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from altm.app import MemoryApp
from altm.core import Settings, TurnEvent
from altm.models import LLMSettings, ModelTask
from altm.pipeline import EmbeddedRuntime, Processor
from altm.wiring import Deployment, open_embedded
from tests.support.turns import make_turn


@asynccontextmanager
async def embedded(settings: Settings, llm_settings: dict[ModelTask, LLMSettings] | None = None,
                   processors: Sequence[Processor] | None = None) -> AsyncIterator[Deployment]:
    """An embedded deployment whose runtime is started (not in the background): call run_until_idle."""
    async with open_embedded(settings, llm_settings=llm_settings, processors=processors) as deployment:
        yield deployment


def runtime_of(deployment: Deployment) -> EmbeddedRuntime:
    assert deployment.runtime is not None
    return deployment.runtime


@asynccontextmanager
async def store_with(settings: Settings, turns: Sequence[TurnEvent]) -> AsyncIterator[tuple[EmbeddedRuntime,
                                                                                              MemoryApp]]:
    async with open_embedded(settings) as deployment:
        runtime = runtime_of(deployment)
        await runtime.publish(list(turns))
        await runtime.run_until_idle()
        yield runtime, deployment.app


@asynccontextmanager
async def running(settings: Settings, llm_settings: dict[ModelTask, LLMSettings] | None = None
                  ) -> AsyncIterator[EmbeddedRuntime]:
    """The started embedded runtime of a deployment (its stores close with it)."""
    async with open_embedded(settings, llm_settings=llm_settings) as deployment:
        yield runtime_of(deployment)


async def said_after_erasure(settings: Settings, erased: TurnEvent, later: Sequence[TurnEvent], *,
                             before: Sequence[TurnEvent] = ()) -> None:
    """``before`` and ``erased`` stored and ``erased``'s session erased, then ``later`` sent and derived (no
    embedder): what the guard does with what is said after an erasure."""
    async with store_with(settings.model_copy(update={"embedder": "none"}), [*before, erased]) as (rt, app):
        await app.erase(erased.scope, "session", session_id=erased.session_id)
        await rt.run_until_idle()
        await rt.publish(list(later))
        await rt.run_until_idle()


async def say(runtime: EmbeddedRuntime, i: int, text: str, session: str) -> None:
    """Turn ``i`` said in ``session``, derived until the runtime is idle."""
    await runtime.publish([make_turn(i, text, session=session)])
    await runtime.run_until_idle()
