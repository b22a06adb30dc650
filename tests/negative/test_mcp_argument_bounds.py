"""MCP tools accept arguments the HTTP API refuses for the same operation (red team, MCP surface).

The HTTP request models (``altm/interfaces/http/_requests.py`` and the query parameters of
``altm/interfaces/http/_app.py``) bound what a caller may send; the MCP tools in
``altm/interfaces/mcp/_server.py`` take bare ``str``/``int`` parameters and the facade does not repeat the
bounds, so over MCP (stdio or streamable HTTP, any key that may recall the scope):

* ``prepare`` with ``content=""`` publishes an empty user turn and stores an empty L0 memory
  (HTTP: ``PrepareRequest.content`` has ``min_length=1``, 422);
* ``abort`` stores a reason of any length up to the 64 KiB event payload in the cycle's row
  (HTTP: ``AbortRequest.reason`` ``max_length=2000``);
* ``review`` with ``limit=-1`` lists the whole review queue (SQLite reads ``LIMIT -1`` as no limit; HTTP:
  ``limit`` ``ge=1, le=500``);
* ``emerge`` takes ``limit=-1`` (Python slicing: ``[:-1]`` silently drops the last result instead of refusing;
  the CLI has ``--limit`` ``min=1``) and ``seed_limit=10_000`` (recall then runs with ``top_k=40,000``; HTTP's
  ``/v1/query`` caps ``top_k`` at 200).

Expected: each refused with a tool error giving the reason, as HTTP answers 422. Fix direction: annotate the
tool parameters with the same ``Field`` bounds (or validate them through the HTTP request models), or move the
bounds into the facade so that every interface shares them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from altm.app import MemoryApp
from altm.core.settings import Settings
from altm.interfaces.mcp import build_server
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The billing deadline is January 10.", session="s1")]


async def _cycle(app: MemoryApp) -> str:
    result = await build_server(app, "runtime").call_tool("prepare", {
        "scope": SCOPE.path, "session_id": "s2", "turn_id": "t1", "content": "When is the billing deadline?"})
    payload: Any = result
    cycle_id: str = json.loads(payload.content[0].text)["cycle_id"]
    return cycle_id


CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("runtime", "prepare", {"scope": SCOPE.path, "session_id": "s3", "turn_id": "t1", "content": ""}),
    ("runtime", "abort", {"reason": "r" * 5000}),
    ("admin", "review", {"scope": SCOPE.path, "limit": -1}),
    ("admin", "emerge", {"scope": SCOPE.path, "query": "billing deadline", "limit": -1}),
    ("admin", "emerge", {"scope": SCOPE.path, "query": "billing deadline", "seed_limit": 10_000}),
]


@pytest.mark.parametrize(("profile", "tool", "args"), CASES,
                         ids=["empty-content", "long-abort-reason", "review-limit-negative", "emerge-limit-negative",
                              "emerge-seed-limit"])
async def test_an_argument_http_refuses_is_refused_over_mcp(settings: Settings, profile: Any, tool: str,
                                                             args: dict[str, Any]) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        if tool == "abort":
            args = {**args, "cycle_id": await _cycle(app)}
        server = build_server(app, profile)
        with pytest.raises(ToolError):  # actual: the tool runs
            await server.call_tool(tool, args)
