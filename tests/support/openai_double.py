"""A local HTTP server that speaks the OpenAI chat-completions and embeddings API (a test double).

It binds to 127.0.0.1 on a free port, counts requests, and answers chat requests with a scripted function
of the request (a string is the message content; an int is an HTTP error status).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Responder = Callable[[dict[str, Any]], "str | int"]


_REPORTED = {"prompt_tokens": 50, "completion_tokens": 50, "total_tokens": 100}


@dataclass
class OpenAIDouble:
    responder: Responder
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    usage: dict[str, int] | None = field(default_factory=lambda: dict(_REPORTED))
    """What a chat completion reports as its usage; None: no usage at all (an endpoint that leaves it out)."""

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def user_texts(self) -> list[str]:
        return [m["content"] for r in self.chat_requests for m in r["body"]["messages"]
                if m["role"] == "user"]


def fake_embedding(text: str, dim: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    raw = [(digest[i % len(digest)] - 128) / 128.0 for i in range(dim)]
    norm = sum(x * x for x in raw) ** 0.5 or 1.0
    return [x / norm for x in raw]


def _handler(double: OpenAIDouble, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            with lock:
                double.requests.append({"path": self.path, "body": body})
            if self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                dim = int(body.get("dimensions") or 16)
                self._send(200, {
                    "object": "list", "model": body["model"],
                    "data": [{"object": "embedding", "index": i, "embedding": fake_embedding(t, dim)}
                             for i, t in enumerate(texts)],
                    "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
                })
                return
            answer = double.responder(body)
            if isinstance(answer, int):
                self._send(answer, {"error": {"message": f"scripted error {answer}", "type": "server_error"}})
                return
            self._send(200, {
                "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": answer}}],
                **({"usage": double.usage} if double.usage is not None else {}),
            })

    return Handler


def one_fact(body: dict[str, Any]) -> str:
    """A responder for the extraction task: one fact atom, the user's message as it is."""
    return json.dumps({"atoms": [{"kind": "fact", "content": next(
        m["content"] for m in body["messages"] if m["role"] == "user")}]})


@contextmanager
def openai_double(responder: Responder, *, usage: dict[str, int] | Literal["reported"] | None = "reported"
                  ) -> Iterator[OpenAIDouble]:
    """The double on a loopback port; ``usage``: what its completions report (default 50 + 50 tokens)."""
    double = OpenAIDouble(responder)
    if usage != "reported":
        double.usage = usage
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(double, threading.Lock()))
    double.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield double
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
