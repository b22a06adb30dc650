"""Getting events in: ``ingest`` (embedded pipeline), ``publish`` (to Kafka) and ``validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from altm.app.ingest import IngestSummary, iter_lines, publish_file, read_line
from altm.app.ingest import ingest_file as _ingest_file
from altm.core import DecodeError, Settings, all_topic_specs
from altm.interfaces.cli._common import (
    DEFAULT_DATA_DIR,
    DataDir,
    PipelineProgress,
    console,
    fail,
    run,
    settings_for,
    shown,
)
from altm.wiring import open_bus, open_embedded, resolve

FileArg = Annotated[Path, typer.Argument(help="JSONL: turn/control events or flat transcript lines")]
Partitions = Annotated[int | None, typer.Option(help="Partition count for a new data dir (or new topics)")]


def print_summary(summary: IngestSummary) -> None:
    if summary.resumed_after:
        console.print(f"resumed an interrupted ingest of this file after line {summary.resumed_after}")
    console.print(Text.assemble(
        ("ingest:", "bold"), f" {summary.lines} lines: {summary.published} published, "
        f"{summary.dead_lettered_at_input} dead-lettered at input, "
        f"{summary.dead_lettered_in_pipeline} dead-lettered in the pipeline, "
        f"{summary.rejected} rejected by the writer; {summary.processed_records} records processed"
    ))


async def ingest_into(settings: Settings, file: Path) -> IngestSummary:
    """The embedded pipeline over ``file`` until idle, with progress on the console."""
    async with open_embedded(settings) as deployment:
        assert deployment.runtime is not None
        with PipelineProgress("lines", _line_count(file)) as progress:
            return await _ingest_file(deployment.runtime, file, on_progress=progress)


def _line_count(file: Path) -> int:
    with file.open("rb") as f:
        return sum(1 for _ in f)


def _readable(file: Path) -> None:
    """A file to read, or a one-line error before anything is opened or created."""
    if not file.exists():
        fail(f"no such file: {file}")
    if not file.is_file():
        fail(f"{file} is not a file")
    try:
        file.open("rb").close()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")


def ingest(file: FileArg, data_dir: DataDir = DEFAULT_DATA_DIR, partitions: Partitions = None) -> None:
    """Run the embedded pipeline over FILE until idle. Bad lines go to the DLQ with their line number."""
    _readable(file)
    print_summary(run(ingest_into(settings_for(data_dir, partitions=partitions), file)))


def publish(file: FileArg, broker: Annotated[str, typer.Option(help="kafka://HOST:PORT")],
            partitions: Partitions = None, data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Publish FILE to Kafka (creating the topics if needed), as a host agent would, sealed with the key store
    of DATA_DIR (the workers' data dir: they open what it seals)."""
    _readable(file)
    settings = resolve(settings_for(data_dir, broker=broker, partitions=partitions))
    summary = IngestSummary()

    async def go() -> None:
        bus = open_bus(settings)
        await bus.start()
        try:
            await bus.ensure_topics(all_topic_specs(settings.partitions, settings.topic_prefix,
                                                    settings.dlq_retention_ms))
            await publish_file(bus, settings, file, summary)
        finally:
            await bus.stop()

    run(go())
    console.print(f"published {summary.published} events, {summary.dead_lettered_at_input} lines dead-lettered")


def validate(file: Annotated[Path, typer.Argument()]) -> None:
    """Check a JSONL file of events without ingesting it; prints each bad line and why."""
    _readable(file)
    bad = 0
    settings = settings_for(DEFAULT_DATA_DIR)
    for lineno, text in iter_lines(file):
        try:
            read_line(text, settings)
        except DecodeError as exc:
            bad += 1
            typer.echo(f"line {lineno}: {shown(exc)}")
    if bad:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    for command in (ingest, publish, validate):
        app.command()(command)
