"""The memory browser over its ASGI app (no socket, no browser): a store with the given turns, one key per
level (user, agent, another agent, another tenant), and a logged-in client."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from fastapi import FastAPI

from altm.core import TurnEvent
from altm.core.settings import Settings
from altm.interfaces.http import KeyStore, create_app
from altm.pipeline import EmbeddedRuntime
from tests.support.memories import store_with

KEYS = {"user": ("dana", "acme/platform/dana"), "agent": ("coder", "acme/platform/dana/coder"),
        "reviewer": ("reviewer", "acme/platform/dana/reviewer"), "globex": ("globex", "globex")}


@dataclass
class BrowserWorld:
    client: httpx.AsyncClient
    keys: dict[str, str]  # KEYS' names → the API keys
    runtime: EmbeddedRuntime
    api: FastAPI
    keystore: KeyStore


@asynccontextmanager
async def browser_world(settings: Settings, tmp_path: Path, turns: Sequence[TurnEvent]
                        ) -> AsyncIterator[BrowserWorld]:
    async with store_with(settings.model_copy(update={"embedder": "none"}), turns) as (rt, app):
        keystore = KeyStore(tmp_path / "keys.json")
        keys = {what: keystore.create(name, prefix) for what, (name, prefix) in KEYS.items()}
        api = create_app(app, keystore)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://127.0.0.1") as c:
            yield BrowserWorld(c, keys, rt, api, keystore)


async def login(c: httpx.AsyncClient, key: str) -> str:
    """Logs in afresh; the CSRF token of the login (from a page's forms)."""
    c.cookies.clear()
    r = await c.post("/ui/login", data={"api_key": key})
    assert r.status_code == 303 and r.headers["location"] == "/ui/scopes"
    found = re.search(r'name="csrf" value="([^"]+)"', (await c.get("/ui/scopes")).text)
    assert found is not None
    return found.group(1)
