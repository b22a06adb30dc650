"""The HTTP API through its ASGI app (no socket)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from altm.core import Scope
from altm.core.settings import Settings
from altm.interfaces.http import KeyStore, create_app
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

OTHER = Scope.parse("globex/ops/sam/coder")


@pytest.fixture
async def client(settings: Settings, tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    turns = [make_turn(1, "The billing deadline is December 15.", session="s1"),
             make_turn(2, "Globex deploys on Fridays.", scope=OTHER, session="g1")]
    async with store_with(settings.model_copy(update={"embedder": "none"}), turns) as (_, app):
        keys = KeyStore(tmp_path / "keys.json")
        acme = keys.create("acme-agent", "acme/platform/dana")
        admin = keys.create("ops", "acme", admin=True)
        globex = keys.create("globex-agent", "globex")

        async def stats() -> dict[str, int]:
            return {"memories": 1}

        api = create_app(app, keys, stats)
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            yield c, {"acme": acme, "admin": admin, "globex": globex}


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_health_needs_no_key_and_openapi_is_published(client: tuple[httpx.AsyncClient, dict[str, str]]
                                                            ) -> None:
    c, _ = client
    assert (await c.get("/healthz")).json() == {"status": "ok"}
    spec = (await c.get("/openapi.json")).json()
    assert {"/v1/prepare", "/v1/commit", "/v1/abort", "/v1/drilldown", "/v1/feedback", "/v1/memories",
            "/v1/stats"} <= set(spec["paths"])


async def test_auth_401_and_403(client: tuple[httpx.AsyncClient, dict[str, str]]) -> None:
    c, keys = client
    body = {"scope": SCOPE.path, "session_id": "s2", "turn_id": "t1", "content": "deadline?"}
    assert (await c.post("/v1/prepare", json=body)).status_code == 401
    assert (await c.post("/v1/prepare", json=body, headers=_auth("altm_wrong"))).status_code == 401
    foreign = {**body, "scope": OTHER.path}
    r = await c.post("/v1/prepare", json=foreign, headers=_auth(keys["acme"]))
    assert r.status_code == 403 and "limited to 'acme/platform/dana'" in r.json()["message"]
    assert OTHER.path not in r.text  # a refusal names the key's own prefix only
    r = await c.get("/v1/memories", params={"scope": OTHER.path}, headers=_auth(keys["acme"]))
    assert r.status_code == 403
    assert (await c.get("/v1/stats", headers=_auth(keys["acme"]))).status_code == 403
    assert (await c.get("/v1/stats", headers={"X-API-Key": keys["admin"]})).status_code == 200


async def test_validation_422_with_clear_messages(client: tuple[httpx.AsyncClient, dict[str, str]]) -> None:
    c, keys = client
    r = await c.post("/v1/prepare", json={"scope": "acme/platform", "session_id": "s", "turn_id": "t",
                                          "content": "x"}, headers=_auth(keys["acme"]))
    assert r.status_code == 422 and "TENANT/WORKSPACE/USER/AGENT" in r.text
    r = await c.post("/v1/prepare", json={"scope": SCOPE.path, "session_id": "s", "turn_id": "t", "content": "x",
                                          "token_budget": 5}, headers=_auth(keys["acme"]))
    assert r.status_code == 422 and "token_budget" in r.text
    r = await c.post("/v1/prepare", json={"scope": SCOPE.path, "session_id": "s", "turn_id": "t", "content": "x",
                                          "preset": "magic"}, headers=_auth(keys["acme"]))
    assert r.status_code == 422 and "unknown preset" in r.text


async def test_prepare_commit_drilldown_over_http(client: tuple[httpx.AsyncClient, dict[str, str]]) -> None:
    c, keys = client
    h = _auth(keys["acme"])
    r = await c.post("/v1/prepare", json={"scope": SCOPE.path, "session_id": "s1", "turn_id": "t9",
                                          "content": "billing deadline", "token_budget": 500}, headers=h)
    assert r.status_code == 200, r.text
    prepared = r.json()
    item = prepared["bundle"]["items"][0]
    r = await c.post("/v1/drilldown", json={"scope": SCOPE.path, "marker": item["marker"]}, headers=h)
    assert r.status_code == 200 and r.json()["content"]
    r = await c.post("/v1/commit", json={"cycle_id": prepared["cycle_id"], "assistant_content": "Dec 15",
                                         "cited_memory_ids": ["mem_" + "0" * 32]}, headers=h)
    assert r.status_code == 422 and r.json()["error"] == "invalid_citation"
    r = await c.post("/v1/commit", json={"cycle_id": prepared["cycle_id"], "assistant_content": "Dec 15",
                                         "cited_memory_ids": [item["memory_id"]]}, headers=h)
    assert r.status_code == 200 and r.json()["state"] == "committed"
    r = await c.post("/v1/abort", json={"cycle_id": prepared["cycle_id"], "reason": "late"}, headers=h)
    assert r.status_code == 409
    r = await c.post("/v1/commit", json={"cycle_id": "cyc_" + "0" * 32, "assistant_content": "x"}, headers=h)
    assert r.status_code == 404
    r = await c.post("/v1/feedback", json={"scope": SCOPE.path, "memory_ids": [item["memory_id"]],
                                           "signal": "helpful"}, headers=h)
    assert r.status_code == 200 and r.json()["accepted"]


async def test_a_key_for_one_tenant_never_reads_another(client: tuple[httpx.AsyncClient, dict[str, str]]) -> None:
    c, keys = client
    h = _auth(keys["acme"])
    r = await c.get("/v1/memories", params={"scope": SCOPE.path}, headers=h)
    assert r.status_code == 200
    assert r.json()["memories"] and all("Globex" not in m["content"] for m in r.json()["memories"])
    r = await c.post("/v1/query", json={"scope": SCOPE.path, "query": "Globex deploys Fridays"}, headers=h)
    assert r.status_code == 200 and all("Globex" not in x["content"] for x in r.json()["results"])


async def test_erase_is_scoped_and_validated(client: tuple[httpx.AsyncClient, dict[str, str]]) -> None:
    c, keys = client
    h = _auth(keys["acme"])
    r = await c.post("/v1/erase", json={"scope": OTHER.path, "target": "user"}, headers=h)
    assert r.status_code == 403
    r = await c.post("/v1/erase", json={"scope": SCOPE.path, "target": "memory"}, headers=h)
    assert r.status_code == 422 and "memory_id" in r.text
    r = await c.post("/v1/erase", json={"scope": SCOPE.path, "target": "session", "session_id": "s1"}, headers=h)
    assert r.status_code == 200 and r.json()["event_id"].startswith("ctl_")


async def test_a_foreign_cycle_answers_like_an_unknown_one(client: tuple[httpx.AsyncClient, dict[str, str]]
                                                          ) -> None:
    """Cycle ids are derived from scope, session and turn: a 403 told a key which cycles exist elsewhere."""
    c, keys = client
    body = {"scope": SCOPE.path, "session_id": "s9", "turn_id": "t1", "content": "deadline?"}
    prepared = await c.post("/v1/prepare", json=body, headers=_auth(keys["acme"]))
    assert prepared.status_code == 200
    cycle = prepared.json()["cycle_id"]
    answers = []
    for cycle_id in (cycle, "cyc_" + "0" * 32):
        r = await c.post("/v1/commit", json={"cycle_id": cycle_id, "assistant_content": "x"},
                         headers=_auth(keys["globex"]))
        answers.append((r.status_code, r.json()["message"].replace(cycle_id, "ID")))
    assert answers[0] == answers[1] and answers[0][0] == 404
    assert SCOPE.path not in answers[0][1]


async def test_an_out_of_range_review_item_is_refused_at_the_api(client: tuple[httpx.AsyncClient, dict[str, str]]
                                                                 ) -> None:
    """Issue 14, F0: any tenant's key, on its own scope, stopped every write of every tenant with this call."""
    c, keys = client
    body = {"scope": SCOPE.path, "item_id": "rej_99999999999999999999999", "decision": "approve"}
    r = await c.post("/v1/review", json=body, headers=_auth(keys["acme"]))
    assert r.status_code == 422 and "item_id" in r.text
    ok = await c.post("/v1/prepare", json={"scope": SCOPE.path, "session_id": "s2", "turn_id": "t1",
                                          "content": "deadline?"}, headers=_auth(keys["acme"]))
    assert ok.status_code == 200


async def test_an_offset_beyond_sqlite_integers_is_refused(client: tuple[httpx.AsyncClient, dict[str, str]]
                                                           ) -> None:
    """Issue 14 (red-team §2, Low): offset 2^63 was a 500 (OverflowError in the store)."""
    c, keys = client
    r = await c.get("/v1/memories", params={"scope": SCOPE.path, "offset": str(2**63)}, headers=_auth(keys["acme"]))
    assert r.status_code == 422 and "offset" in r.text
    r = await c.get("/v1/memories", params={"scope": SCOPE.path, "offset": "3"}, headers=_auth(keys["acme"]))
    assert r.status_code == 200


async def test_a_body_over_the_limit_is_refused_before_it_is_read(client: tuple[httpx.AsyncClient, dict[str, str]]
                                                                  ) -> None:
    """Issue 14 (red-team §2, Low): a 50 MB body was accepted and processed."""
    c, keys = client
    big = {"scope": SCOPE.path, "session_id": "s", "turn_id": "t", "content": "x" * (2 * 1024 * 1024)}
    r = await c.post("/v1/prepare", json=big, headers=_auth(keys["acme"]))
    assert r.status_code == 413 and "over the limit" in r.json()["detail"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b" " * 65536

    r = await c.post("/v1/prepare", content=chunks(), headers=_auth(keys["acme"]))
    assert r.status_code == 413
    ok = await c.post("/v1/prepare", json={**big, "content": "deadline?"}, headers=_auth(keys["acme"]))
    assert ok.status_code == 200


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def test_metrics_show_the_pipeline_and_recall_with_bounded_labels(
        client: tuple[httpx.AsyncClient, dict[str, str]]) -> None:
    """Issue 16, item 1: /metrics on the retrieval service (no key, like /healthz), names and values after a
    known ingest and one prepare_turn; no label carries a user, scope or memory id."""
    c, keys = client
    before = _samples((await c.get("/metrics")).text)
    body = {"scope": SCOPE.path, "session_id": "s2", "turn_id": "t9", "content": "when is the billing deadline?"}
    assert (await c.post("/v1/prepare", json=body, headers=_auth(keys["acme"]))).status_code == 200
    response = await c.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    after = _samples(response.text)

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("altm_prepare_turn_seconds_count") == 1 and delta("altm_bundle_tokens_count") == 1
    assert delta("altm_recall_step_seconds_count", step="fusion") >= 1
    assert after[("altm_stage_records_total", (("outcome", "in"), ("stage", "capture")))] >= 2  # the fixture's turns
    assert after[("altm_writer_proposals_total", (("op", "upsert_memory"), ("status", "committed")))] >= 2
    values = {v for _, labels in after for _, v in labels}
    assert not any("dana" in v or "acme" in v or v.startswith("mem_") for v in values)


async def test_a_feedback_note_that_is_not_text_is_refused_with_the_reason(
        client: tuple[httpx.AsyncClient, dict[str, str]]) -> None:
    """A lone surrogate (``"\\ud800"`` in the JSON) in a feedback's note answered 500 (nothing was published):
    every other field answers 422 (red team of the interfaces, 2026-12-07)."""
    c, keys = client
    h = _auth(keys["acme"])
    r = await c.post("/v1/prepare", json={"scope": SCOPE.path, "session_id": "s1", "turn_id": "t9",
                                          "content": "billing deadline", "token_budget": 500}, headers=h)
    memory_id = r.json()["bundle"]["items"][0]["memory_id"]
    fields = f'"scope": "{SCOPE.path}", "memory_ids": ["{memory_id}"], "signal": "helpful"'
    body = "{" + fields + ', "note": "bad \\ud800 note"}'  # JSON's escape of a lone surrogate
    r = await c.post("/v1/feedback", content=body, headers={**h, "Content-Type": "application/json"})
    assert r.status_code == 422, (r.status_code, r.text[:200])
    assert "note" in r.text
