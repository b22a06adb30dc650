"""Recall and the runtime protocol: ``query``, ``prepare``, ``commit``, ``abort``, ``emerge``, ``drilldown``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from altm.app import Feedback
from altm.interfaces.cli._common import (
    DEFAULT_DATA_DIR,
    BrokerOpt,
    DataDir,
    ScopeOpt,
    deployment_for,
    emit_json,
    fail,
    parse_scope,
    run,
    settings_for,
)
from altm.recall import DEFAULT_PRESET, MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET, PRESETS, build_bundle
from altm.wiring import open_read_only

PresetOpt = Annotated[str, typer.Option("--preset", help=f"Search preset: {', '.join(PRESETS)}")]


def query(
    text: Annotated[str, typer.Argument(help="The query text")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    scope: ScopeOpt = "",
    session: Annotated[str, typer.Option("--session", help="Current session id")] = "",
    preset_name: PresetOpt = DEFAULT_PRESET,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=200)] = 10,
    token_budget: Annotated[int, typer.Option("--token-budget", min=MIN_TOKEN_BUDGET, max=MAX_TOKEN_BUDGET)] = 2000,
    strict_session: Annotated[bool, typer.Option("--strict-session")] = False,
    as_of: Annotated[datetime | None, typer.Option("--as-of", help="Valid in the world at (ISO 8601)")] = None,
    known_at: Annotated[datetime | None, typer.Option("--known-at", help="Believed by the store at")] = None,
    json: Annotated[bool, typer.Option("--json", help="Print JSON (results, bundle, tokens)")] = False,
) -> None:
    """Read-only retrieval: ranked memories and the context bundle they would form."""
    sc = parse_scope(scope)
    if preset_name not in PRESETS:
        fail(f"unknown preset {preset_name!r}; choose one of {sorted(PRESETS)}")

    async def go() -> tuple[list[dict[str, Any]], Any, dict[str, float]]:
        async with open_read_only(settings_for(data_dir)) as deployment:
            result = deployment.app.search(sc, session or None, text, preset_name=preset_name, top_k=top_k,
                                           strict_session=strict_session, as_of=as_of, known_at=known_at)
        bundle = build_bundle(result.hits, query=text, scope=sc.path, session_id=session, preset=preset_name,
                              token_budget=token_budget)
        results = [h.model_dump(include={"memory_id", "layer", "kind", "content", "source_ids", "score", "channels",
                                         "breakdown", "session_id", "trust_status", "flag", "graph_path"})
                   for h in result.hits]
        return results, bundle, result.timings_ms

    results, bundle, timings = run(go())
    if json:
        emit_json({"results": results, "bundle": bundle.rendered, "tokens": bundle.tokens, "preset": preset_name,
                   "timings_ms": timings})
        return
    typer.echo(bundle.rendered)
    typer.echo(f"\n{len(results)} results, {bundle.tokens} tokens, preset {preset_name}")


def prepare(
    text: Annotated[str, typer.Argument(help="The user's message")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    scope: ScopeOpt = "",
    session: Annotated[str, typer.Option("--session")] = "",
    turn: Annotated[str, typer.Option("--turn", help="Turn id of this user message")] = "",
    token_budget: Annotated[int, typer.Option("--token-budget", min=MIN_TOKEN_BUDGET, max=MAX_TOKEN_BUDGET)] = 2000,
    preset_name: PresetOpt = DEFAULT_PRESET,
    strict_session: Annotated[bool, typer.Option("--strict-session")] = False,
    broker: BrokerOpt = None,
) -> None:
    """prepare_turn: capture the user message and print the cycle id and context bundle (JSON)."""
    sc = parse_scope(scope)
    if not session or not turn:
        fail("--session and --turn are required")

    async def go() -> dict[str, Any]:
        async with deployment_for(data_dir, broker) as deployment:
            prepared = await deployment.app.prepare_turn(sc, session, turn, text, token_budget,
                                                         preset_name=preset_name, strict_session=strict_session)
            await deployment.settle()
            return prepared.model_dump()

    emit_json(run(go()))


def commit(
    cycle_id: Annotated[str, typer.Argument()],
    text: Annotated[str, typer.Argument(help="The assistant's answer")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    cite: Annotated[list[str] | None, typer.Option("--cite", help="Cited memory id (repeatable)")] = None,
    helpful: Annotated[list[str] | None, typer.Option("--helpful")] = None,
    harmful: Annotated[list[str] | None, typer.Option("--harmful")] = None,
    broker: BrokerOpt = None,
) -> None:
    """commit_turn: record the assistant's answer, its citations and feedback."""
    fb = Feedback(helpful=helpful or [], harmful=harmful or []) if (helpful or harmful) else None

    async def go() -> dict[str, Any]:
        async with deployment_for(data_dir, broker) as deployment:
            done = await deployment.app.commit_turn(cycle_id, text, cite or [], fb)
            await deployment.settle()
            return done.model_dump()

    emit_json(run(go()))


def abort(
    cycle_id: Annotated[str, typer.Argument()],
    reason: Annotated[str, typer.Option("--reason")] = "aborted by the host",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    broker: BrokerOpt = None,
) -> None:
    """abort_turn: close a cycle that cannot commit."""

    async def go() -> dict[str, Any]:
        async with deployment_for(data_dir, broker) as deployment:
            cycle = await deployment.app.abort_turn(cycle_id, reason)
            await deployment.settle()
            return cycle.model_dump(mode="json")

    emit_json(run(go()))


def emerge(
    text: Annotated[str, typer.Argument()],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    scope: ScopeOpt = "",
    session: Annotated[str, typer.Option("--session")] = "",
    seed_limit: Annotated[int, typer.Option("--seed-limit", min=1)] = 5,
    max_hops: Annotated[int, typer.Option("--max-hops", min=1, max=4)] = 2,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 10,
) -> None:
    """Query-induced emergence: related memories the query text does not match (read-only)."""
    sc = parse_scope(scope)

    async def go() -> list[dict[str, Any]]:
        async with open_read_only(settings_for(data_dir)) as deployment:
            found = deployment.app.emerge(sc, text, session_id=session or None, seed_limit=seed_limit,
                                          max_hops=max_hops, limit=limit)
            return [e.model_dump() for e in found]

    emit_json(run(go()))


def drilldown(
    marker: Annotated[str, typer.Argument(help="memory://<memory_id>#<content_hash>")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    scope: ScopeOpt = "",
    query_text: Annotated[str | None, typer.Option("--query", help="Return only matching lines")] = None,
) -> None:
    """The original content behind a marker (or up to 50 matching lines), scope-checked."""
    sc = parse_scope(scope)

    async def go() -> dict[str, Any]:
        async with open_read_only(settings_for(data_dir)) as deployment:
            return deployment.app.drilldown(marker, sc, query_text).model_dump()

    emit_json(run(go()))


def register(app: typer.Typer) -> None:
    for command in (query, prepare, commit, abort, emerge, drilldown):
        app.command()(command)
