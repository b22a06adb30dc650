"""The ``altm`` command line (typer)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from altm.app.ingest import IngestSummary, ingest_file
from altm.app.stats import DataDirError, collect_stats, state_hash
from altm.bus import BusError, TopicPartition
from altm.bus.embedded import EmbeddedLog, default_log_path
from altm.core import DecodeError, Scope, decode_dead_letter, decode_event
from altm.core.settings import Settings
from altm.pipeline.runtime import EmbeddedRuntime

app = typer.Typer(help="ALTM: long-term memory for LLM agents, as a streaming pipeline.", no_args_is_help=True)
log_app = typer.Typer(help="Inspect the embedded log.", no_args_is_help=True)
app.add_typer(log_app, name="log")

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DataDir = Annotated[Path, typer.Option("--data-dir", help="ALTM data dir (log, shards, indexes)")]


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


def _settings(data_dir: Path, **overrides: Any) -> Settings:
    return Settings(data_dir=data_dir, **{k: v for k, v in overrides.items() if v is not None})


def sample_path() -> Path:
    return Path(str(resources.files("altm").joinpath("data/sample_conversation.jsonl")))


def _print_summary(summary: IngestSummary) -> None:
    console.print(
        f"[bold]ingest:[/] {summary.lines} lines: {summary.published} published, "
        f"{summary.dead_lettered_at_input} dead-lettered at input, "
        f"{summary.dead_lettered_in_pipeline} dead-lettered in the pipeline, "
        f"{summary.rejected} rejected by the writer; {summary.processed_records} records processed"
    )


async def _ingest(settings: Settings, file: Path) -> IngestSummary:
    runtime = EmbeddedRuntime(settings)
    await runtime.start()
    try:
        with console.status("ingesting…") as status:
            counts = {"published": 0, "processed": 0}

            def progress(kind: str, n: int) -> None:
                counts[kind] = n if kind == "published" else counts[kind] + n
                status.update(f"ingesting… {counts['published']} events published, "
                              f"{counts['processed']} records processed")

            return await ingest_file(runtime, file, on_progress=progress)
    finally:
        await runtime.stop()


@app.command()
def ingest(
    file: Annotated[Path, typer.Argument(help="JSONL: turn/control events or flat transcript lines")],
    data_dir: DataDir = Path("altm-data"),
    partitions: Annotated[int | None, typer.Option(help="Partition count for a new data dir")] = None,
) -> None:
    """Run the embedded pipeline over FILE until idle. Bad lines go to the DLQ with their line number."""
    if not file.exists():
        raise _fail(f"no such file: {file}")
    try:
        summary = asyncio.run(_ingest(_settings(data_dir, partitions=partitions), file))
    except BusError as exc:
        raise _fail(str(exc)) from None
    _print_summary(summary)


@app.command()
def stats(data_dir: DataDir = Path("altm-data"), json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Counts per layer and kind, graph size, DLQ and rejections."""
    try:
        data = collect_stats(data_dir, _settings(data_dir).topic_prefix)
    except DataDirError as exc:
        raise _fail(str(exc)) from None
    if json:
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    table = Table(title=f"ALTM {data_dir}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for layer, n in data["layers"].items():
        table.add_row(f"layer {layer}", str(n))
    for kind, n in data["kinds"].items():
        if n:
            table.add_row(f"kind {kind}", str(n))
    table.add_row("graph nodes", str(data["graph"]["nodes"]))
    table.add_row("graph edges", str(data["graph"]["edges"]))
    if data["verified_fraction"] is not None:
        table.add_row("L2 atoms with a trust verdict", f"{data['verified_fraction']:.0%}")
    table.add_row("dead letters", str(data["dlq"]))
    table.add_row("rejected proposals", str(data["rejected"]))
    console.print(table)


@app.command("state-hash")
def state_hash_cmd(data_dir: DataDir = Path("altm-data")) -> None:
    """SHA-256 of the derived state (wall-clock fields excluded by design)."""
    try:
        typer.echo(state_hash(data_dir))
    except DataDirError as exc:
        raise _fail(str(exc)) from None


@app.command()
def memories(
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str | None, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = None,
    layer: Annotated[str | None, typer.Option(help="L0..L4")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 50,
    json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List stored memories, oldest first."""
    from altm.app.listing import list_memories

    try:
        parsed = Scope.parse(scope) if scope else None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    try:
        rows = list_memories(data_dir, scope=parsed, layer=layer, limit=limit)
    except DataDirError as exc:
        raise _fail(str(exc)) from None
    if json:
        sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    table = Table(title=f"memories ({len(rows)})")
    for col in ("layer", "kind", "scope", "session", "source", "role", "content"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["layer"], r["kind"], r["scope"], r["session_id"] or "", r["source_id"] or "",
                      r["role"] or "", r["content"])
    console.print(table)


@log_app.command("tail")
def log_tail(
    topic: Annotated[str, typer.Argument(help="turns, control, proposals, changes or dlq")],
    data_dir: DataDir = Path("altm-data"),
    n: Annotated[int, typer.Option("-n", "--lines", min=1, help="Records per partition")] = 20,
) -> None:
    """Print the last records of TOPIC (read-only; safe while a pipeline writes)."""
    settings = _settings(data_dir)
    name = topic if topic.startswith(settings.topic_prefix) else settings.topic_prefix + topic
    path = default_log_path(data_dir)

    async def tail() -> list[dict[str, Any]]:
        log = EmbeddedLog(path, read_only=True)
        await log.start()
        try:
            parts = await log.partitions(name)
            out = []
            tps = [TopicPartition(name, p) for p in range(parts)]
            ends = await log.end_offsets(tps)
            for tp in tps:
                for rec in log.read(tp, max(0, ends[tp] - n), n):
                    try:
                        value: Any = orjson.loads(rec.value)
                    except orjson.JSONDecodeError:
                        value = rec.value.decode("utf-8", errors="backslashreplace")
                    out.append({"partition": rec.partition, "offset": rec.offset, "key": rec.key,
                                "value": value})
            return out
        finally:
            await log.stop()

    try:
        records = asyncio.run(tail())
    except BusError as exc:
        raise _fail(str(exc)) from None
    for rec in records:
        sys.stdout.write(orjson.dumps(rec).decode() + "\n")


@app.command("export-schemas")
def export_schemas_cmd(
    out: Annotated[Path | None, typer.Option(help="Directory (default: schemas/json in the package)")] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 if the exported files are stale")] = False,
) -> None:
    """Write the JSON Schemas of the event and memory models."""
    from altm.core.export import export_schemas, stale_schemas

    if check:
        stale = stale_schemas(out)
        if stale:
            raise _fail(f"stale JSON Schemas: {stale}; run `altm export-schemas`")
        typer.echo("JSON Schemas are up to date")
        return
    for path in export_schemas(out):
        typer.echo(str(path))


@app.command()
def validate(file: Annotated[Path, typer.Argument()]) -> None:
    """Check a JSONL file of events without ingesting it; prints each bad line and why."""
    from altm.app.ingest import iter_lines, parse_line

    bad = 0
    for lineno, text in iter_lines(file):
        try:
            parse_line(text)
        except DecodeError as exc:
            bad += 1
            typer.echo(f"line {lineno}: {exc}")
    if bad:
        raise typer.Exit(1)


@app.command()
def erase(
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = "",
    session: Annotated[str | None, typer.Option(help="Erase one session of the agent")] = None,
    memory: Annotated[str | None, typer.Option(help="Erase one memory (and what was derived from it)")] = None,
    agent: Annotated[bool, typer.Option("--agent", help="Erase everything of the agent")] = False,
    user: Annotated[bool, typer.Option("--user", help="Erase everything of the user (all agents)")] = False,
    reason: Annotated[str, typer.Option(help="Recorded with the tombstones and the audit")] = "erasure requested",
) -> None:
    """Erase content from every store and leave tombstones so no replay re-creates it."""
    from altm.app.protocol import ProtocolError
    from altm.wiring._open import embedded_app

    chosen = [name for name, on in (("session", session), ("memory", memory), ("agent", agent), ("user", user))
              if on]
    if len(chosen) != 1:
        raise _fail("choose exactly one of --session S, --memory ID, --agent, --user")
    try:
        parsed = Scope.parse(scope)
    except ValueError as exc:
        raise _fail(str(exc)) from None

    async def run() -> int:
        async with embedded_app(_settings(data_dir)) as (runtime, mem):
            await mem.erase(parsed, chosen[0], memory_id=memory, session_id=session, reason=reason)
            await runtime.run_until_idle()
            return sum(int(s.conn.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0])
                       for s in runtime.shards.existing())

    try:
        tombstones = asyncio.run(run())
    except ProtocolError as exc:
        raise _fail(str(exc)) from None
    console.print(f"erased ({chosen[0]}); {tombstones} tombstones in the store")


@app.command()
def retention(
    data_dir: DataDir = Path("altm-data"),
    preview: Annotated[bool, typer.Option("--preview", help="Show what would be forgotten; change nothing")] = False,
) -> None:
    """Forget memories past their layer's retention (ALTM_RETENTION_DAYS_L0..L4); pinned ones are exempt."""
    from altm.wiring._open import embedded_app

    async def run() -> list[dict[str, object]] | int:
        async with embedded_app(_settings(data_dir)) as (runtime, _):
            if preview:
                return runtime.retention_candidates()
            n = await runtime.retention()
            await runtime.run_until_idle()
            return n

    result = asyncio.run(run())
    if isinstance(result, list):
        for c in result:
            console.print(f"would forget {c['memory_id']} ({c['layer']} {c['kind']}, {c['valid_from']}): "
                          f"{str(c['content'])[:80]}")
        console.print(f"{len(result)} memories past retention (preview: nothing changed)")
    else:
        console.print(f"forgot {result} memories (pinned ones are exempt)")


@app.command()
def compaction(
    data_dir: DataDir = Path("altm-data"),
    preview: Annotated[bool, typer.Option("--preview", help="Show level changes; change nothing")] = False,
) -> None:
    """Move idle memories down compression levels C1..C4 (pinned and recently used ones stay at C0)."""
    from altm.wiring._open import embedded_app

    async def run() -> list[dict[str, object]] | int:
        async with embedded_app(_settings(data_dir)) as (runtime, _):
            if preview:
                return runtime.compaction_candidates()
            n = await runtime.compaction()
            await runtime.run_until_idle()
            return n

    result = asyncio.run(run())
    if isinstance(result, list):
        for c in result:
            console.print(f"{c['memory_id']} ({c['layer']}): C{c['lc_compression']} -> C{c['level']} "
                          f"after {c['idle_days']} idle days")
        console.print(f"{len(result)} level changes (preview: nothing changed)")
    else:
        console.print(f"{result} memories changed compression level")


@app.command()
def sweep(data_dir: DataDir = Path("altm-data")) -> None:
    """Verify every L2 memory that was never verified or changed since its verdict (no reads needed)."""
    from altm.wiring._open import embedded_app

    async def run() -> int:
        async with embedded_app(_settings(data_dir)) as (runtime, _):
            n = await runtime.sweep(limit=100_000)
            await runtime.run_until_idle()
            return n

    console.print(f"verified {asyncio.run(run())} memories")
    stats(data_dir=data_dir, json=False)


@app.command()
def optimize(data_dir: DataDir = Path("altm-data")) -> None:
    """Build the vector index's HNSW graphs (run after large ingests; queries work without it, slower)."""
    from altm.pipeline.runtime._resources import choose_embedder, open_vector_index

    settings = _settings(data_dir)
    embedder = choose_embedder(settings)
    if embedder is None:
        raise _fail("no embedder configured (ALTM_EMBEDDER=none): there is no vector index")
    index = open_vector_index(settings, embedder)
    try:
        with console.status("optimising the vector index…"):
            index.optimize()
    finally:
        index.close()
    console.print("vector index optimised")


@app.command()
def replay(
    data_dir: DataDir = Path("altm-data"),
    into: Annotated[Path, typer.Option("--into", help="A fresh data dir to rebuild into")] = Path("altm-replay"),
    broker: Annotated[str | None, typer.Option(help="kafka://HOST:PORT: replay the Kafka topics instead")] = None,
    from_offset: Annotated[int, typer.Option("--from-offset", min=0)] = 0,
    from_time: Annotated[datetime | None, typer.Option("--from-time", help="Kafka: events from this time")] = None,
    cache_from: Annotated[Path | None, typer.Option("--cache-from", help="Reuse the LLM cache of a data dir")] = None,
) -> None:
    """Re-derive everything from the turns and control events (of DATA_DIR's log, or of Kafka with --broker)
    into a fresh data dir."""
    from altm.app.replay import replay_from_kafka, replay_into

    with console.status("replaying…") as status:
        def progress(kind: str, n: int) -> None:
            status.update(f"replaying… {kind}: {n}")

        try:
            if broker:
                summary = asyncio.run(replay_from_kafka(broker, into, from_offset=from_offset, from_time=from_time,
                                                        cache_from=cache_from, progress=progress))
            else:
                summary = asyncio.run(replay_into(data_dir, into, from_offset=from_offset, progress=progress))
        except DataDirError as exc:
            raise _fail(str(exc)) from None
    console.print(f"replayed {summary.events} events ({summary.records_processed} records processed) in "
                  f"{summary.seconds:.1f} s: {summary.events_per_s:.1f} events/s")
    console.print(f"state hash: {state_hash(into)}")


@app.command()
def publish(
    file: Annotated[Path, typer.Argument(help="JSONL: turn/control events or flat transcript lines")],
    broker: Annotated[str, typer.Option(help="kafka://HOST:PORT")],
    partitions: Annotated[int | None, typer.Option(help="Partition count of every topic")] = None,
) -> None:
    """Publish FILE to Kafka (creating the topics if needed), as a host agent would."""
    from altm.app.ingest import publish_file
    from altm.bus.kafka import KafkaBus
    from altm.core.topics import all_topic_specs

    settings = _settings(Path(), broker=broker, partitions=partitions)
    summary = IngestSummary()

    async def run() -> None:
        bus = KafkaBus(broker)
        await bus.start()
        try:
            await bus.ensure_topics(
                all_topic_specs(settings.partitions, settings.topic_prefix, settings.dlq_retention_ms)
            )
            await publish_file(bus, settings, file, summary)
        finally:
            await bus.stop()

    try:
        asyncio.run(run())
    except BusError as exc:
        raise _fail(str(exc)) from None
    console.print(f"published {summary.published} events, {summary.dead_lettered_at_input} lines dead-lettered")


@app.command()
def worker(
    broker: Annotated[str, typer.Option(help="kafka://HOST:PORT")],
    data_dir: DataDir = Path("altm-data"),
    partitions: Annotated[int | None, typer.Option(help="Partition count of every topic")] = None,
) -> None:
    """Run a faust worker over Kafka (processors and the writer for the partitions it owns)."""
    from altm.pipeline.runtime.kafka import run_worker

    run_worker(_settings(data_dir, broker=broker, partitions=partitions))


review_app = typer.Typer(help="The review queue: contradicted/uncertain memories, deferred actions, "
                                "rejected proposals.", no_args_is_help=True)
app.add_typer(review_app, name="review")


@contextlib.contextmanager
def _read_only(data_dir: Path) -> Iterator[Any]:
    """The application over DATA_DIR without starting the pipeline (safe beside a running one)."""
    from altm.app.stats import log_topics
    from altm.wiring._open import read_only_app

    try:
        partitions, _ = log_topics(data_dir, _settings(data_dir).topic_prefix)
    except DataDirError as exc:
        raise _fail(str(exc)) from None
    with read_only_app(_settings(data_dir, partitions=partitions), partitions) as mem:
        yield mem


def _review_scope(scope: str) -> Scope:
    try:
        return Scope.parse(scope)
    except ValueError as exc:
        raise _fail(str(exc)) from None


@review_app.command("list")
def review_list(
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = "",
    json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Items waiting for a decision, for the user of SCOPE."""
    parsed = _review_scope(scope)
    with _read_only(data_dir) as mem:
        queue = mem.review_queue(parsed)
    if json:
        sys.stdout.write(orjson.dumps(queue, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    table = Table(title="review queue")
    for col in ("item", "what", "why"):
        table.add_column(col, overflow="fold")
    for m in queue["memories"]:
        table.add_row(m["item_id"], f"{m['layer']} {m['kind']} ({m['trust_status']}): {m['content']}",
                      m["trust_reason"] or "")
    for a in queue["deferred_actions"]:
        table.add_row(a["item_id"], f"deferred {a['action']} of {a['target_ids']}", a["reason"])
    for r in queue["rejections"]:
        table.add_row(r["item_id"], f"rejected proposal {r['proposal_id']}", r["reason"])
    console.print(table)


@review_app.command("show")
def review_show(
    item: Annotated[str, typer.Argument(help="mem_…, act_… or rej_<n>")],
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = "",
) -> None:
    """One review item, as JSON."""
    parsed = _review_scope(scope)
    with _read_only(data_dir) as mem:
        queue = mem.review_queue(parsed, limit=1000)
    for group in queue.values():
        for entry in group:
            if entry["item_id"] == item:
                sys.stdout.write(orjson.dumps(entry, option=orjson.OPT_INDENT_2).decode() + "\n")
                return
    raise _fail(f"{item} is not in the review queue of {parsed.home}")


def _decide(item: str, decision: str, data_dir: Path, scope: str, note: str | None) -> None:
    from altm.wiring._open import embedded_app

    parsed = _review_scope(scope)

    async def run() -> list[dict[str, object]]:
        async with embedded_app(_settings(data_dir)) as (runtime, mem):
            await mem.review_decide(parsed, item, decision, note)
            await runtime.run_until_idle()
            return [dict(r) for s in runtime.shards.existing() for r in s.conn.execute(
                "SELECT reason FROM rejections WHERE json_extract(payload, '$.review.item_id') = ? "
                "ORDER BY rejection_id DESC LIMIT 1", (item,))]

    try:
        refused = asyncio.run(run())
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if refused:
        raise _fail(f"the decision was refused: {refused[0]['reason']}")
    console.print(f"{decision}d {item}")


@review_app.command("approve")
def review_approve(
    item: Annotated[str, typer.Argument()],
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = "",
    note: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Approve: a memory becomes verified (ground truth); a deferred action is carried out."""
    _decide(item, "approve", data_dir, scope, note)


@review_app.command("reject")
def review_reject(
    item: Annotated[str, typer.Argument()],
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = "",
    note: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Reject: a memory leaves recall (kept for the audit); a deferred action or rejection is dismissed."""
    _decide(item, "reject", data_dir, scope, note)


gov_app = typer.Typer(help="Autonomous decisions: list, preview and roll back.", no_args_is_help=True)
app.add_typer(gov_app, name="governance")


@gov_app.command("list")
def governance_list(
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = "",
) -> None:
    """Every decision's stages (evaluated → decided → applied / deferred / rolled_back), oldest first."""
    parsed = _review_scope(scope)
    with _read_only(data_dir) as mem:
        events = mem.governance_events(parsed)
    table = Table(title="governance events")
    for col in ("decision id", "decision", "stage", "reason"):
        table.add_column(col, overflow="fold")
    for e in events:
        table.add_row(e["decision_id"], e["decision"], e["stage"], e["reason"])
    console.print(table)


@gov_app.command("preview")
def governance_preview(data_dir: DataDir = Path("altm-data")) -> None:
    """What retention would forget and compaction would compress now; changes nothing."""
    retention(data_dir=data_dir, preview=True)
    compaction(data_dir=data_dir, preview=True)


@gov_app.command("rollback")
def governance_rollback(
    decision_id: Annotated[str, typer.Argument(help="A decision id from `altm governance list`")],
    data_dir: DataDir = Path("altm-data"),
    scope: Annotated[str, typer.Option(help="TENANT/WORKSPACE/USER/AGENT")] = "",
    reason: Annotated[str, typer.Option()] = "rolled back by an operator",
) -> None:
    """Restore the rows a decision changed, from the audit log (a control event the writer applies)."""
    from altm.wiring._open import embedded_app

    parsed = _review_scope(scope)

    async def run() -> list[str]:
        async with embedded_app(_settings(data_dir)) as (runtime, mem):
            await mem.rollback(parsed, decision_id, reason)
            await runtime.run_until_idle()
            return [str(r[0]) for s in runtime.shards.existing() for r in s.conn.execute(
                "SELECT reason FROM rejections WHERE json_extract(payload, '$.rollback.decision_id') = ? "
                "ORDER BY rejection_id DESC LIMIT 1", (decision_id,))]

    refused = asyncio.run(run())
    if refused:
        raise _fail(f"the rollback was refused: {refused[0]}")
    console.print(f"rolled back {decision_id}")


keys_app = typer.Typer(help="API keys for the HTTP API and streamable-HTTP MCP.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option(help="A label for the key")],
    scope_prefix: Annotated[str, typer.Option(help="TENANT[/WORKSPACE[/USER[/AGENT]]] the key may act on")],
    data_dir: DataDir = Path("altm-data"),
    admin: Annotated[bool, typer.Option(help="May read stats across scopes")] = False,
) -> None:
    """Create an API key; it is printed once, only its SHA-256 is stored."""
    from altm.interfaces.serve import keystore

    try:
        key = keystore(_settings(data_dir)).create(name, scope_prefix, admin=admin)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    typer.echo(key)


@app.command()
def serve(
    data_dir: DataDir = Path("altm-data"),
    host: Annotated[str, typer.Option(help="Bind address (loopback by default)")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8420,
    broker: Annotated[str | None, typer.Option(help="kafka://HOST:PORT: serve a Kafka deployment")] = None,
    partitions: Annotated[int | None, typer.Option(help="Partition count (Kafka deployments)")] = None,
) -> None:
    """The HTTP API: with the embedded pipeline in the same process, or (with --broker) as the retrieval
    service of a Kafka deployment, reading the workers' shards and publishing to Kafka."""
    from altm.interfaces.serve import serve_http

    asyncio.run(serve_http(_settings(data_dir, broker=broker, partitions=partitions), host, port))


@app.command("mcp-server")
def mcp_server(
    data_dir: DataDir = Path("altm-data"),
    profile: Annotated[str, typer.Option(help="runtime or admin")] = "runtime",
    transport: Annotated[str, typer.Option(help="stdio or streamable-http")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8421,
) -> None:
    """The MCP server (with the embedded pipeline in-process)."""
    from altm.interfaces.serve import serve_mcp

    if profile not in ("runtime", "admin"):
        raise _fail("--profile is runtime or admin")
    if transport not in ("stdio", "streamable-http"):
        raise _fail("--transport is stdio or streamable-http")
    asyncio.run(serve_mcp(_settings(data_dir), profile, transport, host, port))  # type: ignore[arg-type]


DEMO_QUESTIONS = (
    ("s4-t1", "What is the current deadline for the billing migration?"),
    ("s4-t2", "How should I run the refund batch so it doesn't lock the database?"),
    ("s4-t3", "How does Dana want pull requests and tests written?"),
)


@app.command()
def demo(
    data_dir: DataDir = Path("altm-demo"),
    fresh: Annotated[bool, typer.Option(help="Start from an empty data dir")] = True,
    token_budget: Annotated[int, typer.Option(min=64)] = 600,
) -> None:
    """Ingest the sample multi-session conversation on the embedded defaults, then recall across sessions."""
    import shutil

    from rich.panel import Panel

    if fresh and data_dir.exists():
        shutil.rmtree(data_dir)
    console.rule("[bold]ALTM demo — embedded runtime, no servers, no model")
    console.print(f"sample: {sample_path()}\ndata dir: {data_dir}")
    settings = _settings(data_dir)
    summary = asyncio.run(_ingest(settings, sample_path()))
    _print_summary(summary)
    stats(data_dir=data_dir, json=False)
    scope = Scope.parse("acme/platform/dana/coder")
    console.rule("[bold]prepare_turn in a new session (s4): memories from sessions s1–s3")

    async def ask() -> list[Any]:
        from altm.wiring._open import embedded_app

        out = []
        async with embedded_app(settings) as (runtime, mem):
            for turn_id, question in DEMO_QUESTIONS:
                out.append((question, await mem.prepare_turn(scope, "s4", turn_id, question, token_budget)))
            await runtime.run_until_idle()
        return out

    for question, prepared in asyncio.run(ask()):
        bundle = prepared.bundle
        console.print(f"\n[bold cyan]user:[/] {question}   [dim](cycle {prepared.cycle_id})[/]")
        console.print(Panel(bundle.rendered, title=f"context bundle: {len(bundle.items)} memories, "
                            f"{bundle.tokens}/{bundle.token_budget} tokens", expand=False))
        for item in bundle.items:
            ranks = ", ".join(f"{c}#{r}" for c, r in sorted(item.channels.items()))
            fusion = "score" if "score" in item.breakdown else "rrf"
            console.print(f"  [dim]{item.layer} {item.kind} from session {item.session_id or '*'}: "
                          f"score {item.score:.4f} = {fusion} {item.breakdown[fusion]:.4f} × trust "
                          f"{item.breakdown['trust']} × lifecycle {item.breakdown['lifecycle']} ({ranks})[/]")
    console.print(f"\nstate hash: {state_hash(data_dir)}")


from altm.interfaces.cli import recall as _cli_recall  # noqa: E402

_cli_recall.register(app)


def main() -> None:
    try:
        app()
    except DecodeError as exc:  # pragma: no cover - safety net for bad input reaching the top
        err.print(f"[bold red]error:[/] {exc}")
        raise SystemExit(1) from None


__all__ = ["app", "decode_dead_letter", "decode_event", "main"]
