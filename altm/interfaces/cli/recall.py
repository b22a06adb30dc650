"""CLI commands for recall and the runtime protocol: query, prepare, commit, abort, emerge, drilldown."""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from altm.app.protocol import Feedback, ProtocolError
from altm.app.stats import DataDirError, log_topics
from altm.core import Scope
from altm.core.settings import Settings
from altm.recall.context import build_bundle
from altm.recall.retrieval import DEFAULT_PRESET, PRESETS
from altm.wiring._open import embedded_app, read_only_app

DataDir = Annotated[Path, typer.Option("--data-dir", help="ALTM data dir")]
ScopeOpt = Annotated[str, typer.Option("--scope", help="TENANT/WORKSPACE/USER/AGENT")]
PresetOpt = Annotated[str, typer.Option("--preset", help=f"Search preset: {', '.join(PRESETS)}")]


def _emit(obj: Any) -> None:
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


def _fail(message: str) -> typer.Exit:
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(1)


def _scope(text: str) -> Scope:
    try:
        return Scope.parse(text)
    except ValueError as exc:
        raise _fail(str(exc)) from None


def _settings(data_dir: Path) -> tuple[Settings, int]:
    settings = Settings(data_dir=data_dir)
    try:
        partitions, _ = log_topics(data_dir, settings.topic_prefix)
    except DataDirError as exc:
        raise _fail(str(exc)) from None
    return settings.model_copy(update={"partitions": partitions}), partitions


def query(
    text: Annotated[str, typer.Argument(help="The query text")],
    data_dir: DataDir = Path("altm-data"),
    scope: ScopeOpt = "",
    session: Annotated[str, typer.Option("--session", help="Current session id")] = "",
    preset_name: PresetOpt = DEFAULT_PRESET,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=200)] = 10,
    token_budget: Annotated[int, typer.Option("--token-budget", min=1)] = 2000,
    strict_session: Annotated[bool, typer.Option("--strict-session")] = False,
    as_of: Annotated[datetime | None, typer.Option("--as-of", help="Valid in the world at (ISO 8601)")] = None,
    known_at: Annotated[datetime | None, typer.Option("--known-at", help="Believed by the store at")] = None,
    json: Annotated[bool, typer.Option("--json", help="Print JSON (results, bundle, tokens)")] = False,
) -> None:
    """Read-only retrieval: ranked memories and the context bundle they would form."""
    sc = _scope(scope)
    settings, partitions = _settings(data_dir)
    if preset_name not in PRESETS:
        raise _fail(f"unknown preset {preset_name!r}; choose one of {sorted(PRESETS)}")
    with read_only_app(settings, partitions) as app:
        try:
            result = app.search(sc, session or None, text, preset_name=preset_name, top_k=top_k,
                                strict_session=strict_session, as_of=as_of, known_at=known_at)
        except ValueError as exc:
            raise _fail(str(exc)) from None
        bundle = build_bundle(result.hits, query=text, scope=sc.path, session_id=session, preset=preset_name,
                              token_budget=token_budget)
    results = [
        {"memory_id": h.memory_id, "layer": h.layer, "kind": h.kind, "content": h.content,
         "source_ids": h.source_ids, "score": h.score, "channels": h.channels, "breakdown": h.breakdown,
         "session_id": h.session_id, "trust_status": h.trust_status, "flag": h.flag, "graph_path": h.graph_path}
        for h in result.hits
    ]
    if json:
        _emit({"results": results, "bundle": bundle.rendered, "tokens": bundle.tokens, "preset": preset_name,
               "timings_ms": result.timings_ms})
        return
    typer.echo(bundle.rendered)
    typer.echo(f"\n{len(results)} results, {bundle.tokens} tokens, preset {preset_name}")


def prepare(
    text: Annotated[str, typer.Argument(help="The user's message")],
    data_dir: DataDir = Path("altm-data"),
    scope: ScopeOpt = "",
    session: Annotated[str, typer.Option("--session")] = "",
    turn: Annotated[str, typer.Option("--turn", help="Turn id of this user message")] = "",
    token_budget: Annotated[int, typer.Option("--token-budget", min=1)] = 2000,
    preset_name: PresetOpt = DEFAULT_PRESET,
    strict_session: Annotated[bool, typer.Option("--strict-session")] = False,
) -> None:
    """prepare_turn: capture the user message and print the cycle id and context bundle (JSON)."""
    sc = _scope(scope)
    if not session or not turn:
        raise _fail("--session and --turn are required")
    settings, _ = _settings(data_dir)

    async def run() -> dict[str, Any]:
        async with embedded_app(settings) as (runtime, app):
            prepared = await app.prepare_turn(sc, session, turn, text, token_budget, preset_name=preset_name,
                                              strict_session=strict_session)
            await runtime.run_until_idle()
            return prepared.model_dump()

    try:
        _emit(asyncio.run(run()))
    except (ProtocolError, ValueError) as exc:
        raise _fail(str(exc)) from None


def commit(
    cycle_id: Annotated[str, typer.Argument()],
    text: Annotated[str, typer.Argument(help="The assistant's answer")],
    data_dir: DataDir = Path("altm-data"),
    cite: Annotated[list[str] | None, typer.Option("--cite", help="Cited memory id (repeatable)")] = None,
    helpful: Annotated[list[str] | None, typer.Option("--helpful")] = None,
    harmful: Annotated[list[str] | None, typer.Option("--harmful")] = None,
) -> None:
    """commit_turn: record the assistant's answer, its citations and feedback."""
    settings, _ = _settings(data_dir)
    fb = Feedback(helpful=helpful or [], harmful=harmful or []) if (helpful or harmful) else None

    async def run() -> dict[str, Any]:
        async with embedded_app(settings) as (runtime, app):
            done = await app.commit_turn(cycle_id, text, cite or [], fb)
            await runtime.run_until_idle()
            return done.model_dump()

    try:
        _emit(asyncio.run(run()))
    except ProtocolError as exc:
        raise _fail(str(exc)) from None


def abort(
    cycle_id: Annotated[str, typer.Argument()],
    reason: Annotated[str, typer.Option("--reason")] = "aborted by the host",
    data_dir: DataDir = Path("altm-data"),
) -> None:
    """abort_turn: close a cycle that cannot commit."""
    settings, _ = _settings(data_dir)

    async def run() -> dict[str, Any]:
        async with embedded_app(settings) as (_, app):
            return (await app.abort_turn(cycle_id, reason)).model_dump(mode="json")

    try:
        _emit(asyncio.run(run()))
    except ProtocolError as exc:
        raise _fail(str(exc)) from None


def emerge(
    text: Annotated[str, typer.Argument()],
    data_dir: DataDir = Path("altm-data"),
    scope: ScopeOpt = "",
    session: Annotated[str, typer.Option("--session")] = "",
    seed_limit: Annotated[int, typer.Option("--seed-limit", min=1)] = 5,
    max_hops: Annotated[int, typer.Option("--max-hops", min=1, max=4)] = 2,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 10,
) -> None:
    """Query-induced emergence: related memories the query text does not match (read-only)."""
    sc = _scope(scope)
    settings, partitions = _settings(data_dir)
    with read_only_app(settings, partitions) as app:
        found = app.emerge(sc, text, session_id=session or None, seed_limit=seed_limit, max_hops=max_hops,
                           limit=limit)
    _emit([e.model_dump() for e in found])


def drilldown(
    marker: Annotated[str, typer.Argument(help="memory://<memory_id>#<content_hash>")],
    data_dir: DataDir = Path("altm-data"),
    scope: ScopeOpt = "",
    query_text: Annotated[str | None, typer.Option("--query", help="Return only matching lines")] = None,
) -> None:
    """The original content behind a marker (or up to 50 matching lines), scope-checked."""
    sc = _scope(scope)
    settings, partitions = _settings(data_dir)
    with read_only_app(settings, partitions) as app:
        try:
            _emit(app.drilldown(marker, sc, query_text).model_dump())
        except ProtocolError as exc:
            raise _fail(str(exc)) from None


def register(app: typer.Typer) -> None:
    for fn in (query, prepare, commit, abort, emerge, drilldown):
        app.command()(fn)
