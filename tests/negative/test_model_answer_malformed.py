"""A malformed answer from the model endpoint is a failed model call: deferred, never a dead letter.

What a user expects (README, Models): "A failed call, an invalid answer or an exhausted budget defers the work
item (kept in the shard, retried with backoff), never an invented answer"; "What works today": "deferred work
for model failures". DESIGN section 4: every model call ends in a validated answer or ``defer``.

``OpenAIChat.structured`` (altm/models/_openai.py) maps only ``OpenAIError`` to ``Deferred`` and reads the
completion with ``resp.choices[0].message.content`` unguarded. The ``openai`` client does not validate a 200
body: a gateway or proxy that answers 200 with an HTML page (a base URL without ``/v1`` in front of a web UI, a
captive portal), a body that is not JSON, a choice with ``"message": null`` or a ``content`` that is not a
string reach that line as a ``str``, a ``JSONDecodeError`` or an object without the attribute. The result is an
``AttributeError``/``ValueError`` out of the processor, which the stage driver (``_one`` in
altm/pipeline/_drivers.py) dead-letters as an "internal error": the message loses its atoms for good (a dead
letter is final), the call is counted under no outcome of ``altm_model_calls``, and the same happens to fold,
link, verify and govern. At recall time ``_model_compressions`` (altm/app/_protocol.py) only catches
``Deferred``, so the same answer fails ``prepare_turn`` itself instead of letting the extractive compression
stand in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from altm.core import decode_dead_letter
from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, running, runtime_of
from tests.support.turns import make_turn

_COMPLETION = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}

BODIES: dict[str, tuple[str, bytes]] = {
    "html page": ("text/html", b"<html><body>Sign in to the gateway</body></html>"),
    "not json": ("application/json", b'{"id": "x", "choices": [{"mess'),
    "null message": ("application/json", json.dumps(
        {**_COMPLETION, "choices": [{"index": 0, "finish_reason": "stop", "message": None}]}).encode()),
    "content not a string": ("application/json", json.dumps(
        {**_COMPLETION, "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": 42}}]}).encode()),
}


@contextmanager
def endpoint(content_type: str, body: bytes) -> Iterator[list[dict[str, Any]]]:
    """An OpenAI-compatible base URL that answers every request 200 with ``body``; yields (base_url, requests)."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            seen.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}"))
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield [{"base_url": f"http://127.0.0.1:{server.server_address[1]}/v1", "requests": seen}]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize("answer", list(BODIES))
async def test_a_malformed_model_answer_defers_the_extraction(settings: Settings, answer: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 3600.0})
    with endpoint(*BODIES[answer]) as (ep,):
        llm = {ModelTask.L2: LLMSettings(base_url=ep["base_url"], model="m", max_retries=0)}
        async with running(s, llm_settings=llm) as rt:
            await rt.publish([make_turn(1, "We decided to ship the billing service on Tuesdays.")])
            await rt.run_until_idle()
            deferred = rt.work.count()
            dead = [decode_dead_letter(r.value) for r in await rt.log.read_all(["altm.dlq"])]
    assert ep["requests"], "the model was never asked"
    assert [(d.stage, d.error) for d in dead] == [], "a malformed model answer was dead-lettered"
    assert deferred == 1, f"the extraction was not deferred ({deferred} deferred work items)"


async def test_a_malformed_compression_answer_leaves_prepare_turn_working(settings: Settings) -> None:
    """The recall-time compression (L1 task) falls back to the extractive compression on a model failure;
    a malformed answer must not fail ``prepare_turn``."""
    s = settings.model_copy(update={"embedder": "none"})
    long_prose = " ".join(f"The billing service migration step {i} moved invoices to the new ledger cluster."
                          for i in range(60))
    async with embedded(s) as dep:  # stored first without a model
        rt = runtime_of(dep)
        await rt.publish([make_turn(1, long_prose)])
        await rt.run_until_idle()
    with endpoint(*BODIES["html page"]) as (ep,):
        llm = {ModelTask.L1: LLMSettings(base_url=ep["base_url"], model="m", max_retries=0)}
        async with embedded(s, llm_settings=llm) as dep:
            scope = make_turn(1, "x").scope
            prepared = await dep.app.prepare_turn(scope, "s1", "t-ask", "What happened in the billing service "
                                                  "migration to the ledger cluster?", 300)
    assert ep["requests"], "the model was never asked to compress"
    assert prepared.bundle.memory_ids
