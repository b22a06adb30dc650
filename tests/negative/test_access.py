"""What each key level may do (issue 14: F3, F9, F10, F15), over HTTP and MCP through the same gate.

An agent key works within its agent (L0-L3, read-only L4 of its user); the review queue, L4 curation and
erasing the user need a user key; stats and replay need an admin key. Unknown and foreign ids answer alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from altm.app import MemoryApp
from altm.core import Scope
from altm.core.settings import Settings
from altm.interfaces.access import ApiKey, KeyStore
from altm.interfaces.http import create_app
from altm.interfaces.mcp import build_server
from altm.pipeline import EmbeddedRuntime
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = Scope.parse("acme/platform/dana/writer")
GLOBEX = Scope.parse("globex/ops/sam/coder")
HISTORY = [
    make_turn(1, "I prefer small pull requests under 300 lines.", session="s1"),
    make_turn(2, "The deadline for the writer migration is December 15.", scope=WRITER, session="w1"),
    make_turn(3, "The deadline for the globex audit is May 2.", scope=GLOBEX, session="g1"),
]


@dataclass
class World:
    client: httpx.AsyncClient
    keys: dict[str, str]
    store: KeyStore
    app: MemoryApp
    runtime: EmbeddedRuntime
    data_dir: Path

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[name]}"}

    def memory_id(self, agent: str, layer: str) -> str:
        (row,) = rows(self.data_dir, "SELECT memory_id FROM memories WHERE agent_id=? AND layer=? AND user_id='dana'",
                      (agent, layer))
        return str(row["memory_id"])


@pytest.fixture
async def world(settings: Settings, tmp_path: Path) -> AsyncIterator[World]:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        store = KeyStore(tmp_path / "keys.json")
        keys = {"coder": store.create("coder", SCOPE.path), "dana": store.create("dana", SCOPE.home),
                "globex": store.create("globex", "globex"), "admin": store.create("ops", "acme", admin=True)}

        async def stats() -> dict[str, int]:
            return {"memories": 1}

        transport = httpx.ASGITransport(app=create_app(app, store, stats))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            yield World(c, keys, store, app, rt, s.data_dir)


async def test_an_agent_key_cannot_see_or_decide_the_users_review_queue(world: World) -> None:
    """F3: an agent key listed other agents' contradicted memories and approved or rejected them."""
    c = world.client
    r = await c.get("/v1/review", params={"scope": SCOPE.path}, headers=world.auth("coder"))
    assert r.status_code == 403 and "needs a user key" in r.json()["message"]
    body = {"scope": SCOPE.path, "item_id": world.memory_id("writer", "L2"), "decision": "reject"}
    assert (await c.post("/v1/review", json=body, headers=world.auth("coder"))).status_code == 403
    assert (await c.get("/v1/review", params={"scope": SCOPE.path}, headers=world.auth("dana"))).status_code == 200


async def test_an_agent_key_cannot_erase_the_user_or_another_agents_memory(world: World) -> None:
    """F3: POST /v1/erase {scope: <agent>, target: user} with an agent key erased every agent of the user."""
    c = world.client
    r = await c.post("/v1/erase", json={"scope": SCOPE.path, "target": "user"}, headers=world.auth("coder"))
    assert r.status_code == 403
    foreign = world.memory_id("writer", "L2")
    r = await c.post("/v1/erase", json={"scope": SCOPE.path, "target": "memory", "memory_id": foreign},
                     headers=world.auth("coder"))
    unknown = await c.post("/v1/erase", json={"scope": SCOPE.path, "target": "memory", "memory_id": "mem_" + "7" * 32},
                           headers=world.auth("coder"))
    assert r.status_code == unknown.status_code == 404 and r.json()["error"] == unknown.json()["error"]
    for signal in ("pin", "harmful"):
        r = await c.post("/v1/feedback", json={"scope": SCOPE.path, "memory_ids": [foreign], "signal": signal},
                         headers=world.auth("coder"))
        assert r.status_code == 404
    await world.runtime.run_until_idle()
    assert rows(world.data_dir, "SELECT 1 FROM memories WHERE agent_id='writer'")  # untouched
    own = world.memory_id("coder", "L2")
    body = {"scope": SCOPE.path, "target": "memory", "memory_id": own}
    r = await c.post("/v1/erase", json=body, headers=world.auth("coder"))
    # its own atom, but the user's L4 facet was derived from it and would go with it: a user-level write
    assert r.status_code == 403 and "needs a user key" in r.json()["message"] and "L4" in r.json()["message"]
    capsule = world.memory_id("coder", "L1")  # derived into nothing beyond the agent: its own to erase
    r = await c.post("/v1/erase", json={**body, "memory_id": capsule}, headers=world.auth("coder"))
    assert r.status_code == 200
    assert (await c.post("/v1/erase", json=body, headers=world.auth("dana"))).status_code == 200


async def test_the_l4_persona_is_read_only_for_an_agent_key(world: World) -> None:
    c = world.client
    facet = world.memory_id("coder", "L4")
    for body in ({"scope": SCOPE.path, "memory_ids": [facet], "signal": "pin"},):
        r = await c.post("/v1/feedback", json=body, headers=world.auth("coder"))
        assert r.status_code == 403 and "belongs to the whole user" in r.json()["message"]
        assert (await c.post("/v1/feedback", json=body, headers=world.auth("dana"))).status_code == 200
    r = await c.post("/v1/erase", json={"scope": SCOPE.path, "target": "memory", "memory_id": facet},
                     headers=world.auth("coder"))
    assert r.status_code == 403
    r = await c.post("/v1/feedback", json={"scope": SCOPE.path, "memory_ids": [facet], "signal": "helpful"},
                     headers=world.auth("coder"))
    assert r.status_code == 200  # reading (and saying it helped) is the agent's to do


async def test_idempotency_keys_are_namespaced_by_scope(world: World) -> None:
    """F10: tenant A reusing tenant C's idempotency key took over C's cycle (403 naming A's scope, or 409)."""
    c = world.client
    body = {"session_id": "s9", "turn_id": "t1", "content": "deadline?", "idempotency_key": "order-42"}
    mine = await c.post("/v1/prepare", json={**body, "scope": GLOBEX.path}, headers=world.auth("globex"))
    theirs = await c.post("/v1/prepare", json={**body, "scope": SCOPE.path}, headers=world.auth("coder"))
    assert mine.status_code == theirs.status_code == 200
    assert mine.json()["cycle_id"] != theirs.json()["cycle_id"] and not theirs.json()["replayed"]
    done = await c.post("/v1/commit", json={"cycle_id": mine.json()["cycle_id"], "assistant_content": "May 2."},
                        headers=world.auth("globex"))
    assert done.status_code == 200 and SCOPE.path not in done.text


async def test_a_foreign_id_answers_like_an_unknown_one(world: World) -> None:
    """F15: drilldown answered 403 for another tenant's existing memory id and 404 for an unknown one."""
    c = world.client
    (row,) = rows(world.data_dir, "SELECT memory_id, content_hash FROM memories WHERE tenant_id='globex' "
                                  "AND layer='L0'")
    foreign = {"scope": SCOPE.path, "marker": f"memory://{row['memory_id']}#{row['content_hash'][:12]}"}
    unknown = {"scope": SCOPE.path, "marker": f"memory://mem_{'5' * 32}#{row['content_hash'][:12]}"}
    a = await c.post("/v1/drilldown", json=foreign, headers=world.auth("coder"))
    b = await c.post("/v1/drilldown", json=unknown, headers=world.auth("coder"))
    assert a.status_code == b.status_code == 404 and a.json()["error"] == b.json()["error"]
    assert "globex" not in a.text


async def _refusal(world: World, profile: Any, key: ApiKey, name: str, args: dict[str, Any]) -> str | None:
    """The tool error an MCP call with ``key`` gets (None when the tool ran)."""
    server = build_server(world.app, profile, caller=lambda: key, stats=_stats, replay=_replay)
    try:
        await server.call_tool(name, args)
    except ToolError as exc:
        return str(exc)
    return None


async def _stats() -> dict[str, Any]:
    return {"memories": 1}


async def _replay() -> dict[str, Any]:
    return {"rewound": ["capture"]}


async def test_mcp_admin_tools_need_an_admin_key_and_agent_keys_stay_in_their_agent(world: World) -> None:
    """F9: the MCP admin profile served stats (every tenant's counts) and replay to any key."""
    plain = world.store.lookup(world.keys["dana"])
    admin = world.store.lookup(world.keys["admin"])
    coder = world.store.lookup(world.keys["coder"])
    assert plain is not None and admin is not None and coder is not None
    for name in ("stats", "replay"):
        assert "an admin key is needed" in str(await _refusal(world, "admin", plain, name, {}))
        assert await _refusal(world, "admin", admin, name, {}) is None
    assert "needs a user key" in str(await _refusal(world, "admin", coder, "review", {"scope": SCOPE.path}))
    assert await _refusal(world, "admin", plain, "review", {"scope": SCOPE.path}) is None
    assert await _refusal(world, "admin", coder, "erase", {"scope": SCOPE.path, "target": "user"})
    facet = world.memory_id("coder", "L4")
    assert await _refusal(world, "runtime", coder, "pin", {"scope": SCOPE.path, "memory_ids": [facet]})
    assert await _refusal(world, "runtime", plain, "pin", {"scope": SCOPE.path, "memory_ids": [facet]}) is None
