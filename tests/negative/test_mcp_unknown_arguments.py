"""The MCP tools silently ignore arguments they do not know, so a misspelt option is dropped without a word
(red team, MCP surface).

The HTTP API refuses a body with an unknown field (422 naming it: ``_Body`` in
``altm/interfaces/http/_requests.py`` is ``extra="forbid"``, "a misspelt option was silently ignored"), and
commit's ``Feedback`` is ``extra="forbid"`` too. The MCP tools for the same operations take their arguments
from the function signatures in ``altm/interfaces/mcp/_server.py``, and the MCP SDK's argument model
(``ArgModelBase``) keeps pydantic's default ``extra="ignore"``:

* ``prepare`` with ``strict_sesion: true`` (meant: ``strict_session``) returns a bundle with memories of
  *other sessions* — the agent asked for this session only;
* ``commit`` with ``cited_ids`` (meant: ``cited_memory_ids``) commits with no citations: the citations the
  lifecycle learns from are lost, and a retry with the right name is refused as a different commit;
* ``feedback`` with ``notes`` (meant: ``note``) drops the note.

Expected: a tool error naming the unknown argument, as HTTP answers 422. Fix direction: validate MCP
arguments with ``extra="forbid"`` models (e.g. the HTTP request models themselves), or check the argument
names against the tool's signature before calling it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from altm.core.settings import Settings
from altm.interfaces.mcp import build_server
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The billing deadline is January 10.", session="s1")]
QUESTION = "When is the billing deadline?"


def _payload(result: Any) -> dict[str, Any]:
    text = result.content[0].text
    data: dict[str, Any] = json.loads(text)
    return data


async def test_a_misspelt_prepare_option_is_refused_not_ignored(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        server = build_server(app, "runtime")
        base = {"scope": SCOPE.path, "turn_id": "t1", "content": QUESTION}
        strict = _payload(await server.call_tool("prepare", {**base, "session_id": "s2", "strict_session": True}))
        assert strict["bundle"]["memory_ids"] == []  # spelt right, the option holds: nothing from session s1
        try:
            typo = _payload(await server.call_tool("prepare", {**base, "session_id": "s3", "strict_sesion": True}))
        except ToolError as exc:
            assert "strict_sesion" in str(exc)
            return
        # actual: the option is dropped and session s1's memory is in the bundle
        raise AssertionError(f"strict_sesion was ignored: {len(typo['bundle']['items'])} items from other sessions")


async def test_a_misspelt_commit_argument_is_refused_not_ignored(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        server = build_server(app, "runtime")
        prepared = _payload(await server.call_tool("prepare", {
            "scope": SCOPE.path, "session_id": "s2", "turn_id": "t1", "content": QUESTION}))
        cited = prepared["bundle"]["memory_ids"]
        assert cited
        with pytest.raises(ToolError, match="cited_ids"):
            await server.call_tool("commit", {"cycle_id": prepared["cycle_id"], "assistant_content": "January 10.",
                                              "cited_ids": cited})


async def test_a_misspelt_feedback_note_is_refused_not_ignored(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        server = build_server(app, "runtime")
        (row,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0'")
        with pytest.raises(ToolError, match="notes"):
            await server.call_tool("feedback", {"scope": SCOPE.path, "memory_ids": [row["memory_id"]],
                                                "signal": "harmful", "notes": "the date moved to March"})
