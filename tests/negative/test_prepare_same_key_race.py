"""Two concurrent ``prepare_turn`` calls with one idempotency key and different requests both succeed.

What a caller expects (README, runtime protocol): "The same idempotency key with the same request is a safe
retry; with a different request it is a conflict". ``ProtocolService.prepare_turn`` (altm/app/_protocol.py)
looks the key's cycle up in the ``CycleBook`` (``self.cycles.get(cycle_id)``), then awaits the summarisation
(L1) model for long prose (``_model_compressions``) and the log (``self.publish``), and only then records the
cycle (``self.cycles.remember``). Nothing holds the key while it waits: a second request with the same key
that arrives meanwhile finds no cycle, recalls for its own content and publishes too. Both callers get the
same ``cycle_id`` with ``replayed=False`` and a bundle recalled for their own message; both turn events and
both cycle events go on the log under one event id each, so the writer keeps one request's message and cycle
while this process remembers the other's (the last ``remember``): one caller was told its message was
prepared although it is never stored, and the cycle it commits is another request's.

Here the embedded deployment with an L1 model configured: the model answers once both prepares have asked it
(a barrier; without the race the second prepare never reaches the model and the barrier times out).

Expected: exactly one of the two prepares succeeds; the other is refused with ``IdempotencyConflict`` (or
waits for the first and is answered as its conflict), as it would be a moment later.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from altm.app import IdempotencyConflict, PreparedTurn
from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.turns import SCOPE, make_turn

STORY = " ".join(f"On day {i} the billing migration team reviewed invoice batch {i} and found nothing unusual "
                 f"about refunds." for i in range(60))


async def test_one_key_two_requests_at_once_is_one_cycle_and_one_conflict(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    both_asked = threading.Condition()
    asked: list[str] = []

    def answer(body: dict[str, Any]) -> str | int:
        name = body["response_format"]["json_schema"]["name"]
        if name == "CompressedText":
            with both_asked:
                asked.append(name)
                both_asked.notify_all()
                both_asked.wait_for(lambda: len(asked) >= 2, timeout=5)  # the race: both prepares are waiting
            return json.dumps({"text": "Sixty days of invoice reviews, nothing unusual."})
        if name == "CapsuleSummary":
            return json.dumps({"summary": "Invoice reviews.", "decisions": [], "constraints": [],
                               "corrections": [], "open_questions": []})
        return 400

    with openai_double(answer) as api:
        llm = {ModelTask.L1: LLMSettings(base_url=api.base_url, model="summariser", max_retries=0, timeout_s=30)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, STORY, session="s1")])
            await rt.run_until_idle()
            results = await asyncio.gather(
                app.prepare_turn(SCOPE, "s1", "s1-q", "What did the invoice reviews find about refunds?", 300,
                                 idempotency_key="agent-7-request-1"),
                app.prepare_turn(SCOPE, "s1", "s1-q", "Which invoice batches did the billing team review?", 300,
                                 idempotency_key="agent-7-request-1"),
                return_exceptions=True)
            await rt.run_until_idle()
    ok = [r for r in results if isinstance(r, PreparedTurn)]
    refused = [r for r in results if isinstance(r, IdempotencyConflict)]
    assert len(ok) == 1 and len(refused) == 1, (
        f"one idempotency key, two different requests at once: {len(ok)} prepared "
        f"{[(p.cycle_id, p.bundle.query, p.replayed) for p in ok]}, {len(refused)} refused as a conflict")
