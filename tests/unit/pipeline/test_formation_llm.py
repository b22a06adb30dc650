"""Memory formation with a model: the OpenAI-compatible test double on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

from altm.core import Kind
from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from altm.pipeline import EmbeddedRuntime
from tests.support.memories import embedded, running, runtime_of
from tests.support.openai_double import openai_double
from tests.support.turns import SCOPE, make_turn

PREFS = "I prefer tabs over spaces. Never deploy on Fridays because rollbacks are slow; ship on Tuesdays."


def extraction_answer(body: dict[str, Any]) -> str:
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "tabs" in text:
        return json.dumps({"atoms": [
            {"kind": "preference", "content": "The user prefers tabs over spaces.", "subject": "indentation"},
            {"kind": "anti_pattern", "content": "Deploying on Fridays", "pattern": "deploy on Fridays",
             "why_bad": "rollbacks are slow", "better_alternative": "ship on Tuesdays"},
        ]})
    return json.dumps({"atoms": []})


def _settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})


def _llm(base_url: str, **extra: Any) -> dict[ModelTask, LLMSettings]:
    return {ModelTask.L2: LLMSettings(base_url=base_url, model="test-extractor", max_retries=0, **extra)}


def _atoms(rt: EmbeddedRuntime) -> list[dict[str, Any]]:
    return [dict(r) for s in rt.shards.existing()
            for r in s._db.execute("SELECT * FROM memories WHERE layer='L2' ORDER BY memory_id")]


async def test_structured_extraction_labels_method_model_and_prompt(settings: Settings) -> None:
    with openai_double(extraction_answer) as api:
        async with running(_settings(settings), llm_settings=_llm(api.base_url)) as rt:
            await rt.publish([make_turn(1, PREFS)])
            await rt.run_until_idle()
            atoms = _atoms(rt)
    assert {a["kind"] for a in atoms} == {Kind.PREFERENCE.value, Kind.ANTI_PATTERN.value}
    assert all(a["method"] == "llm" and a["model"] == "test-extractor" and a["prompt_hash"] for a in atoms)
    anti = next(a for a in atoms if a["kind"] == "anti_pattern")
    attrs = json.loads(anti["attributes"])
    assert attrs["why_bad"] == "rollbacks are slow" and attrs["better_alternative"] == "ship on Tuesdays"
    assert len(api.chat_requests) == 1
    body = api.chat_requests[0]["body"]
    assert body["response_format"]["type"] == "json_schema"


async def test_replay_answers_from_the_cache_without_a_second_request(settings: Settings) -> None:
    with openai_double(extraction_answer) as api:
        async with running(_settings(settings), llm_settings=_llm(api.base_url)) as rt:
            await rt.publish([make_turn(1, PREFS), make_turn(2, "Nothing to keep here.")])
            await rt.run_until_idle()
            before = [a["memory_id"] for a in _atoms(rt)]
            assert len(api.chat_requests) == 2
            await rt.rewind(["extract"])
            await rt.run_until_idle()
            assert len(api.chat_requests) == 2  # every answer came from the shard's cache
            assert [a["memory_id"] for a in _atoms(rt)] == before


async def test_invalid_json_is_deferred_then_retried(settings: Settings) -> None:
    calls = {"n": 0}

    def flaky(body: dict[str, Any]) -> str:
        calls["n"] += 1
        return "this is not JSON" if calls["n"] == 1 else extraction_answer(body)

    with openai_double(flaky) as api:
        async with running(_settings(settings), llm_settings=_llm(api.base_url)) as rt:
            await rt.publish([make_turn(1, PREFS)])
            await rt.run_until_idle()
            assert rt.work.count() == 0
            assert len(_atoms(rt)) == 2  # produced by the retry, not invented on failure
            assert len(api.chat_requests) == 2


async def test_invalid_json_never_becomes_memories(settings: Settings) -> None:
    with openai_double(lambda body: '{"atoms": [{"kind": "gossip", "content": "x"}]}') as api:
        s = _settings(settings).model_copy(update={"defer_backoff_s": 3600.0})
        async with running(s, llm_settings=_llm(api.base_url)) as rt:
            await rt.publish([make_turn(1, PREFS)])
            await rt.run_until_idle()
            assert _atoms(rt) == []
            assert rt.work.count() == 1
            (reason,) = [r[0] for sh in rt.shards.existing() for r in sh._db.execute(
                "SELECT reason FROM deferred_work")]
            assert "does not match ExtractionResult" in reason


async def test_budget_exhausted_defers_without_partial_writes(settings: Settings) -> None:
    with openai_double(extraction_answer) as api:
        s = _settings(settings).model_copy(update={"defer_backoff_s": 3600.0})
        async with running(s, llm_settings=_llm(api.base_url, token_budget=100)) as rt:
            await rt.publish([make_turn(1, PREFS), make_turn(2, PREFS.replace("Tuesdays", "Mondays"))])
            await rt.run_until_idle()
            atoms = _atoms(rt)
            # the first call spent the whole budget (100 tokens); the second message is deferred, untouched
            assert len(api.chat_requests) == 1
            assert atoms and len({json.loads(a["evidence"])[0] for a in atoms}) == 1
            assert rt.work.count() == 1
            (reason,) = [r[0] for sh in rt.shards.existing() for r in sh._db.execute(
                "SELECT reason FROM deferred_work")]
            assert "token budget of task L2 exhausted" in reason


async def test_server_errors_are_deferred_not_guessed(settings: Settings) -> None:
    with openai_double(lambda body: 500) as api:
        s = _settings(settings).model_copy(update={"defer_backoff_s": 3600.0})
        async with running(s, llm_settings=_llm(api.base_url)) as rt:
            await rt.publish([make_turn(1, PREFS)])
            await rt.run_until_idle()
            assert _atoms(rt) == []
            assert rt.work.count() == 1
            l0 = sum(sh._db.execute("SELECT COUNT(*) FROM memories WHERE layer='L0'").fetchone()[0]
                     for sh in rt.shards.existing())
            assert l0 == 1  # capture is never blocked by a model


def staged_answer(body: dict[str, Any]) -> str | int:
    """One double for every stage: the schema name in response_format says which stage is asking."""
    schema = body["response_format"]["json_schema"]["name"]
    if schema == "ExtractionResult":
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "light" in text:
            return json.dumps({"atoms": [{"kind": "preference", "content": "Prefers light mode in the editor.",
                                          "subject": "editor theme"}]})
        return json.dumps({"atoms": [{"kind": "preference", "content": "Prefers dark mode in the editor.",
                                      "subject": "editor theme"}]})
    if schema == "CapsuleSummary":
        return json.dumps({"summary": "The user talked about editor themes.", "decisions": [],
                           "constraints": [], "corrections": ["switched from dark to light mode"],
                           "open_questions": []})
    if schema == "GraphExtraction":
        return json.dumps({"entities": [{"name": "Editor", "type": "Entity"}, {"name": "Dark mode"}],
                           "relations": [{"src": "Editor", "dst": "Dark mode", "label": "uses"}]})
    if schema == "NLIJudgement":
        return json.dumps({"label": "contradiction", "confidence": 0.9})
    if schema == "SupersedeRubric":
        return json.dumps({"supersede": True, "confidence": 0.95, "reason": "same topic, new value"})
    return 400


async def test_every_stage_uses_its_model_when_configured(settings: Settings) -> None:
    with openai_double(staged_answer) as api:
        stages = {stage: LLMSettings(base_url=api.base_url, model=f"m-{stage.value.lower()}", max_retries=0)
                  for stage in (ModelTask.L1, ModelTask.L2, ModelTask.GRAPH, ModelTask.NLI, ModelTask.GOVERNANCE)}
        async with running(_settings(settings), llm_settings=stages) as rt:
            await rt.publish([make_turn(1, "I use dark mode in my editor.", session="a"),
                              make_turn(2, "Now I switched to light mode in the editor.", session="b")])
            await rt.run_until_idle()
            rows = [dict(r) for s in rt.shards.existing() for r in s._db.execute(
                "SELECT layer, kind, method, model, trust_status, trust_method, superseded_by, attributes "
                "FROM memories ORDER BY valid_from, memory_id")]
            nodes = [dict(r) for s in rt.shards.existing() for r in s._db.execute(
                "SELECT name, method FROM graph_nodes")]
            edges = [dict(r) for s in rt.shards.existing() for r in s._db.execute(
                "SELECT edge_type, label, method FROM graph_edges WHERE edge_type='RELATED'")]
    capsules = [r for r in rows if r["layer"] == "L1"]
    assert capsules and all(r["method"] == "llm" and r["model"] == "m-l1" for r in capsules)
    atoms = [r for r in rows if r["layer"] == "L2"]
    assert len(atoms) == 2 and all(r["model"] == "m-l2" for r in atoms)
    dark, _light = atoms
    assert dark["trust_status"] == "contradicted" and dark["trust_method"] == "nli"
    assert any(n["method"] == "llm" and n["name"] == "Editor" for n in nodes)
    assert edges and edges[0]["label"] == "uses" and edges[0]["method"] == "llm"
    facets = [r for r in rows if r["layer"] == "L4"]
    assert len(facets) == 2 and facets[0]["superseded_by"] is not None  # the rubric approved the supersede
    schemas = {r["body"]["response_format"]["json_schema"]["name"] for r in api.chat_requests}
    assert schemas == {"ExtractionResult", "CapsuleSummary", "GraphExtraction", "NLIJudgement", "SupersedeRubric"}


async def test_prose_over_its_share_is_compressed_by_the_model_when_configured(settings: Settings) -> None:
    long_story = " ".join(f"On day {i} the billing migration team reviewed invoice batch {i} and found nothing "
                          f"unusual about refunds." for i in range(60))

    def answer(body: dict[str, Any]) -> str | int:
        name = body["response_format"]["json_schema"]["name"]
        if name == "CompressedText":
            return json.dumps({"text": "Sixty days of invoice reviews found nothing unusual about refunds."})
        if name == "CapsuleSummary":
            return json.dumps({"summary": "reviews", "decisions": [], "constraints": [], "corrections": [],
                               "open_questions": []})
        return 400

    with openai_double(answer) as api:
        llm = {ModelTask.L1: LLMSettings(base_url=api.base_url, model="summariser", max_retries=0)}
        async with embedded(_settings(settings), llm_settings=llm) as deployment:
            rt = runtime_of(deployment)
            await rt.publish([make_turn(1, long_story, session="s1")])
            await rt.run_until_idle()
            prepared = await deployment.app.prepare_turn(SCOPE, "s1", "q", "invoice reviews refunds", 300)
    item = next(i for i in prepared.bundle.items if i.layer == "L0")
    assert item.compressed and item.compression == "llm"
    assert item.text == "Sixty days of invoice reviews found nothing unusual about refunds."
    assert prepared.bundle.tokens <= 300
