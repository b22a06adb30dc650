"""Looking at a data dir: ``stats``, ``state-hash``, ``memories``, ``log tail`` and ``export-schemas``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table

from altm.app.stats import collect_stats
from altm.bus import TopicPartition
from altm.bus.embedded import EmbeddedLog
from altm.bus.sealing import SealedBus, is_shredded
from altm.core.export import export_schemas, stale_schemas
from altm.interfaces.cli._common import (
    DEFAULT_DATA_DIR,
    DataDir,
    Json,
    console,
    emit_json,
    fail,
    parse_scope,
    run,
    settings_for,
    shown,
)
from altm.store import DataDirError, ShardError
from altm.wiring import open_bus, open_read_only, plain, resolve, state_hash, vector_freshness

log_app = typer.Typer(help="Inspect the embedded log.", no_args_is_help=True)


def stats(data_dir: DataDir = DEFAULT_DATA_DIR, json: Json = False) -> None:
    """Counts per layer and kind, graph size, DLQ and rejections."""
    settings = settings_for(data_dir)
    try:
        data = collect_stats(data_dir, settings.topic_prefix)
    except (DataDirError, ShardError) as exc:
        fail(str(exc))
    try:
        data["freshness_vector_l0"] = vector_freshness(data_dir, settings)
    except DataDirError as exc:  # the index is held by a running process: the rest of the stats still stand
        data["freshness_vector_l0"] = {"unavailable": str(exc)}
    if json:
        emit_json(data)
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
    what = {"L0": "word-searchable"}
    for layer, f in data["freshness"].items():
        table.add_row(f"freshness {layer} ({what.get(layer, 'derived')}) p50 / p95",
                      f"{f['p50_s']:.2f} s / {f['p95_s']:.2f} s")
        vector = data["freshness_vector_l0"]
        if layer == "L0" and vector and "p50_s" in vector:
            table.add_row("freshness L0 (vector-searchable) p50 / p95",
                          f"{vector['p50_s']:.2f} s / {vector['p95_s']:.2f} s")
    table.add_row("dead letters", "on the broker" if data["dlq"] is None else str(data["dlq"]))
    table.add_row("rejected proposals", str(data["rejected"]))
    console.print(table)


def state_hash_cmd(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """SHA-256 of the derived state, the vector index's ids included (wall-clock fields excluded)."""
    try:
        typer.echo(state_hash(data_dir, settings_for(data_dir)))
    except DataDirError as exc:
        fail(str(exc))


def memories(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    scope: Annotated[str | None, typer.Option(help="TENANT/WORKSPACE/USER/AGENT (default: every scope)")] = None,
    layer: Annotated[str | None, typer.Option(help="L0..L4")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 50,
    json: Json = False,
) -> None:
    """List stored memories, oldest first: what SCOPE may see (the recall policy, every session), or every
    memory of the data dir when no scope is given."""
    parsed = parse_scope(scope) if scope else None
    if not (data_dir / "shards").exists():
        fail(f"{data_dir} has no shards; run `altm ingest` first")

    async def listing() -> list[dict[str, Any]]:
        async with open_read_only(settings_for(data_dir)) as deployment:
            return deployment.app.recall.list_memories(parsed, layer=layer, limit=limit)

    rows = run(listing())
    if json:
        emit_json(rows)
        return
    table = Table(title=f"memories ({len(rows)})")
    for col in ("layer", "kind", "scope", "session", "source", "role", "content"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(*(shown(v) for v in (r["layer"], r["kind"], r["scope"], r["session_id"] or "",
                                           r["source_id"] or "", r["role"] or "", r["content"])))
    console.print(table)


def log_tail(
    topic: Annotated[str, typer.Argument(help="turns, control, proposals, changes or dlq")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    n: Annotated[int, typer.Option("-n", "--lines", min=1, help="Records per partition")] = 20,
) -> None:
    """Print the last records of TOPIC (read-only; safe while a pipeline writes)."""
    settings = settings_for(data_dir)
    name = topic if topic.startswith(settings.topic_prefix) else settings.topic_prefix + topic

    async def tail() -> list[dict[str, Any]]:
        bus = open_bus(resolve(settings), read_only=True)
        log = plain(bus)
        if not isinstance(log, EmbeddedLog):
            fail(f"{data_dir} belongs to a Kafka deployment: read its topics with Kafka's own tools")
        sealer = bus.sealer if isinstance(bus, SealedBus) else None
        await bus.start()
        try:
            out = []
            tps = [TopicPartition(name, p) for p in range(await log.partitions(name))]
            ends = await log.end_offsets(tps)
            for tp in tps:
                for stored in log.read(tp, max(0, ends[tp] - n), n):
                    rec = sealer.open(stored) if sealer is not None else stored
                    try:
                        value: Any = {"shredded": "erased: its data key is destroyed"} if is_shredded(
                            rec) else orjson.loads(rec.value)
                    except orjson.JSONDecodeError:
                        value = rec.value.decode("utf-8", errors="backslashreplace")
                    out.append({"partition": rec.partition, "offset": rec.offset, "key": rec.key, "value": value})
            return out
        finally:
            await bus.stop()

    for rec in run(tail()):
        sys.stdout.write(orjson.dumps(rec).decode() + "\n")


def export_schemas_cmd(
    out: Annotated[Path | None, typer.Option(help="Directory (default: ./schemas)")] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 if the exported files are stale")] = False,
) -> None:
    """Write the JSON Schemas of the event and memory models (for producers in other languages)."""
    if check:
        stale = stale_schemas(out)
        if stale:
            fail(f"stale JSON Schemas: {stale}; run `altm export-schemas`")
        typer.echo("JSON Schemas are up to date")
        return
    for path in export_schemas(out):
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command()(stats)
    app.command("state-hash")(state_hash_cmd)
    app.command()(memories)
    app.command("export-schemas")(export_schemas_cmd)
    log_app.command("tail")(log_tail)
    app.add_typer(log_app, name="log")
