"""A malformed answer of the remote embedding endpoint leaves recall without its vector channel, not failing.

What a user expects (README, Reliability; ``Retriever._nearest_result``, altm/recall/retrieval/_engine.py): "an
embedding model or index that fails leaves recall without its vector channel (``altm_recall_degraded_total``),
not failing" (``tests/negative/test_recall_embedding_outage.py``).

That holds only for ``Deferred`` and ``VectorIndexError``. ``OpenAIEmbeddings.embed`` (altm/models/_openai.py)
maps only ``OpenAIError`` to ``Deferred`` and reads ``resp.data`` unguarded; ``embed_query`` unpacks exactly one
vector (altm/models/_base.py); nothing checks the vector's size against ``dimensions``. An endpoint that answers
200 with something else than an embeddings list (a gateway's HTML page, an empty ``data`` list, a model swapped
for one of another size that ignores ``dimensions``) raises ``AttributeError``/``ValueError`` (or the index's
own error) out of ``_nearest_result``, and ``search`` and ``prepare_turn`` fail as a whole although the word
channels found the answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from altm.core import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import fake_embedding
from tests.support.turns import SCOPE, make_turn

FACT = "The billing service stores invoices in the Postgres cluster called ledger-eu."


def _good(texts: list[str], dim: int) -> tuple[str, bytes]:
    return "application/json", json.dumps({
        "object": "list", "model": "embedder",
        "data": [{"object": "embedding", "index": i, "embedding": fake_embedding(t, dim)} for i, t in enumerate(texts)],
        "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()


BROKEN = {
    "html page": lambda texts, dim: ("text/html", b"<html><body>502 Bad Gateway</body></html>"),
    "empty data": lambda texts, dim: ("application/json", json.dumps(
        {"object": "list", "model": "embedder", "data": [], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    ).encode()),
    "other size": lambda texts, dim: _good(texts, dim * 2),  # the endpoint's model swapped, ``dimensions`` ignored
}


@contextmanager
def embeddings_endpoint() -> Iterator[dict[str, Any]]:
    state: dict[str, Any] = {"answer": _good}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            content_type, data = state["answer"](texts, int(body.get("dimensions") or 16))
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["base_url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize("answer", list(BROKEN))
async def test_recall_answers_from_the_word_channels_when_the_embedding_answer_is_malformed(
        settings: Settings, answer: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    with embeddings_endpoint() as api:
        llm = {ModelTask.EMBEDDING: LLMSettings(base_url=api["base_url"], model="embedder", dimensions=16,
                                                max_retries=0, timeout_s=2.0)}
        async with embedded(s, llm_settings=llm) as d:
            rt = runtime_of(d)
            assert d.vectors is not None
            await rt.publish([make_turn(1, FACT, session="s1")])
            await rt.run_until_idle()
            assert d.vectors.count() > 0  # embedded while the endpoint answered well
            api["answer"] = BROKEN[answer]
            result = d.app.search(SCOPE, "s1", "which Postgres cluster stores billing invoices?")
            assert any("ledger-eu" in h.content for h in result.hits)
            prepared = await d.app.prepare_turn(SCOPE, "s1", "t9", "which Postgres cluster stores billing invoices?",
                                                800)
    assert "ledger-eu" in prepared.bundle.rendered
