"""The MCP server over stdio, driven by the mcp client as an agent host would."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import TextContent
from typer.testing import CliRunner

from altm.interfaces.cli import app, sample_path
from altm.interfaces.mcp import ADMIN_TOOLS, RUNTIME_TOOLS


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("mcp") / "data"
    result = CliRunner().invoke(app, ["ingest", "--data-dir", str(d), str(sample_path())])
    assert result.exit_code == 0, result.output
    return d


def _params(data_dir: Path, profile: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "altm", "mcp-server", "--data-dir", str(data_dir), "--profile", profile,
              "--transport", "stdio"],
    )


def _payload(result: Any) -> Any:
    assert not result.is_error, result
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data
    (content,) = result.content
    assert isinstance(content, TextContent)
    return json.loads(content.text)


async def test_profiles_list_their_tools(data_dir: Path) -> None:
    async with Client(_params(data_dir, "runtime")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == set(RUNTIME_TOOLS)
    async with Client(_params(data_dir, "admin")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        stats = _payload(await client.call_tool("stats", {}))
    assert names == set(ADMIN_TOOLS)
    assert stats["layers"]["L0"] == 29


async def test_prepare_and_commit_over_stdio(data_dir: Path) -> None:
    async with Client(_params(data_dir, "runtime")) as client:
        prepared = _payload(await client.call_tool("prepare", {
            "scope": "acme/platform/dana/coder", "session_id": "m1", "turn_id": "m1-t1",
            "content": "What is the deadline of the billing migration?", "token_budget": 600}))
        ids = prepared["bundle"]["memory_ids"]
        assert ids and prepared["cycle_id"].startswith("cyc_")
        assert f"memory://{ids[0]}#" in prepared["bundle"]["rendered"]  # each memory with its marker, framed
        committed = _payload(await client.call_tool("commit", {
            "cycle_id": prepared["cycle_id"], "assistant_content": "January 10.",
            "cited_memory_ids": [ids[0]]}))
        assert committed["state"] == "committed"
        bad = await client.call_tool("commit", {"cycle_id": "cyc_" + "0" * 32, "assistant_content": "x"})
        (content,) = bad.content
        assert bad.is_error and isinstance(content, TextContent) and "unknown cycle" in content.text
