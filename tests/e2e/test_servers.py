"""`altm serve` and the streamable-HTTP MCP server as processes, on loopback ports."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app, sample_path
from tests.support.processes import altm_process, free_port

runner = CliRunner()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = tmp_path_factory.mktemp("srv") / "data"
    assert runner.invoke(app, ["ingest", "--data-dir", str(d), str(sample_path())]).exit_code == 0
    result = runner.invoke(
        app, ["keys", "create", "--data-dir", str(d), "--name", "t", "--scope-prefix", "acme"]
    )
    assert result.exit_code == 0
    return d, result.output.strip()


def test_serve_answers_on_loopback_with_keys(data: tuple[Path, str]) -> None:
    d, key = data
    port = free_port()
    with altm_process(["serve", "--data-dir", str(d), "--port", str(port)], port):
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
        assert httpx.post(f"{base}/v1/prepare", json={}).status_code == 401
        r = httpx.post(
            f"{base}/v1/prepare",
            headers={"Authorization": f"Bearer {key}"},
            json={
                "scope": "acme/platform/dana/coder",
                "session_id": "x1",
                "turn_id": "x1-t1",
                "content": "When is the billing migration deadline?",
                "token_budget": 600,
            },
            timeout=30,
        )
        assert r.status_code == 200, r.text
        assert any("January 10" in i["text"] for i in r.json()["bundle"]["items"])


async def test_streamable_http_mcp_requires_a_key(data: tuple[Path, str]) -> None:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    d, key = data
    port = free_port()
    args = [
        "mcp-server",
        "--data-dir",
        str(d),
        "--profile",
        "runtime",
        "--transport",
        "streamable-http",
        "--port",
        str(port),
    ]
    with altm_process(args, port):
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient() as plain:
            assert (await plain.post(url, json={})).status_code == 401
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as hc,
            streamable_http_client(url, http_client=hc) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"prepare", "commit", "delete"} <= names
            denied = await session.call_tool(
                "drilldown",
                {"scope": "globex/ops/sam/coder", "marker": "memory://mem_" + "0" * 32 + "#" + "0" * 64},
            )
            assert denied.is_error  # the key is limited to tenant acme
