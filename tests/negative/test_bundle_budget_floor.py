"""A token budget below the bundle's fixed frame is exceeded (red team, recall surface).

README, "Recall and the runtime protocol": "`prepare_turn` captures the user message (a turn event), recalls,
and returns a `ContextBundle` within the token budget (cl100k_base counts)". The HTTP API refuses budgets
under 64 (``PrepareRequest.token_budget: ge=64``), but the Python facade, the MCP ``prepare`` tool and
``altm prepare --token-budget`` (``min=1``) accept any budget from 1: for every budget below the frame's size
(the ``<memories>`` header sentence and the footer, 44 tokens) the bundle is rendered with the whole frame
anyway, so ``bundle.tokens > bundle.token_budget`` and a host that sized its prompt by the budget overflows.

A user expects either a refusal with a reason (as HTTP does: 422) or a bundle whose ``rendered`` text counts at
most ``token_budget`` tokens: the budget is a promise, whatever the interface.
"""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from altm.core.settings import Settings
from altm.interfaces.mcp import build_server
from altm.recall import count_tokens
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is January 10.")]
QUESTION = "When is the billing migration deadline?"


@pytest.mark.parametrize("budget", [1, 8, 20, 40])
async def test_prepare_turn_never_renders_more_tokens_than_its_budget(settings: Settings, budget: int) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        try:
            prepared = await app.prepare_turn(SCOPE, "s2", f"t-{budget}", QUESTION, budget)
        except ValueError:
            return  # refusing a budget too small for the frame, with a reason, is fine
    bundle = prepared.bundle
    assert count_tokens(bundle.rendered) == bundle.tokens
    assert bundle.tokens <= budget, (
        f"token_budget={budget} but the bundle renders {bundle.tokens} tokens: {bundle.rendered!r}")


async def test_the_mcp_prepare_tool_keeps_its_budget(settings: Settings) -> None:
    """The MCP runtime tool has no lower bound on ``token_budget`` (HTTP has ge=64)."""
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        server = build_server(app, "runtime")
        with pytest.raises(ToolError, match="token_budget must be between 64 and 200000"):  # refused, with why
            await server.call_tool("prepare", {
                "scope": SCOPE.path, "session_id": "s2", "turn_id": "t-mcp", "content": QUESTION,
                "token_budget": 16})


async def test_a_huge_budget_is_served_or_refused_with_a_reason(settings: Settings) -> None:
    """MCP ``prepare`` takes any integer: ``token_budget=2**64`` is not refused with a reason (ValueError →
    a tool error naming it) but fails inside ``orjson.dumps`` of the request hash (altm/app/_protocol.py:138,
    ``JSONEncodeError``, a TypeError), which the MCP wrapper turns into an opaque internal error."""
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        try:
            prepared = await app.prepare_turn(SCOPE, "s2", "t-huge", QUESTION, 2**64)
        except ValueError:
            return  # refused with a reason
        except Exception as exc:  # the finding: anything else is a server error
            raise AssertionError(f"token_budget=2**64 raised {type(exc).__name__}: {exc}") from exc
    assert prepared.bundle.tokens <= 2**64
