"""What every command group shares: options, settings, scope parsing, output, and one way to fail."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import orjson
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from altm.app import ProtocolError
from altm.bus import BusError
from altm.core import DecodeError, Scope, Settings, visible
from altm.pipeline import LogBindingError
from altm.store import DataDirError, ShardError
from altm.vectors import VectorIndexBusy
from altm.wiring import Deployment, ReadOnlyError, WiringError, open_deployment, resolve

# memory content, ids and reasons are untrusted text: never read as Rich markup (a stored "[/]" crashed a listing,
# "[conceal]" hid what it wrapped); print markup only through ``Text`` or an explicit ``markup=True``
console = Console(soft_wrap=True, markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)

DEFAULT_DATA_DIR = Settings.model_fields["data_dir"].default
DataDir = Annotated[Path, typer.Option("--data-dir", envvar="ALTM_DATA_DIR",
                                       help="ALTM data dir (log, shards, indexes)")]
ScopeOpt = Annotated[str, typer.Option("--scope", help="TENANT/WORKSPACE/USER/AGENT")]
BrokerOpt = Annotated[str | None, typer.Option(
    "--broker", help="kafka://HOST:PORT: act on a Kafka deployment (default: the bus the data dir recorded)")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON")]

KNOWN_ERRORS = (ProtocolError, BusError, LogBindingError, DataDirError, ShardError, WiringError, ReadOnlyError,
                DecodeError, ValueError, VectorIndexBusy, FileExistsError, NotADirectoryError, IsADirectoryError,
                PermissionError)
T = TypeVar("T")


def shown(value: object) -> str:
    """``value`` as text for a terminal: control characters (escape sequences, carriage returns) and bidi
    overrides a stored memory or an input line carries are written as ``[U+XXXX]``, never sent to the terminal
    (an escape sequence rewrote the line above, OSC 52 set the operator's clipboard)."""
    return visible(str(value))


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line to stderr and exit (no traceback for errors a user can act on)."""
    err.print(Text.assemble(("error:", "bold red"), " ", shown(message)), highlight=False)
    raise typer.Exit(code)


def settings_for(data_dir: Path, **overrides: Any) -> Settings:
    """Settings from the environment with the command's options on top (``None`` means not given); a value
    they refuse ends the command with one line naming it (it was a traceback: this runs before ``run``)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(data_dir=data_dir, **given)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        where = f"--{field.replace('_', '-')}" if field in given else f"ALTM_{field.upper()}"
        fail(f"{where}: {first['msg']}" + (f" (got {first['input']!r})" if "input" in first else ""))


def parse_scope(text: str) -> Scope:
    try:
        return Scope.parse(text)
    except ValueError as exc:
        fail(str(exc))


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine; errors with a clear message end the command with that message."""
    try:
        return asyncio.run(coro)
    except KNOWN_ERRORS as exc:
        fail(str(exc))


def _require_data_dir(bus: str | None, data_dir: Path) -> None:
    """An embedded deployment's data dir holds its log (a mistyped --data-dir is refused, not created)."""
    log = Path((bus or "").removeprefix("sqlite:///"))
    # shards without a log are a Kafka worker's data dir, refused with that reason when the deployment opens
    if (bus or "").startswith("sqlite:///") and not log.exists() and not (data_dir / "shards").exists():
        raise DataDirError(f"{data_dir} is not an ALTM data dir (no {log.name}); check --data-dir, or run "
                           "`altm ingest` first")


@asynccontextmanager
async def deployment_for(data_dir: Path, broker: str | None = None, *, existing: bool = False,
                         **overrides: Any) -> AsyncIterator[Deployment]:
    """The deployment a writing command acts on: the embedded pipeline in this process, or a Kafka client
    (``--broker``, or the bus the data dir recorded) whose workers apply what it publishes. Call
    ``settle()`` to wait for that. ``existing``: the command acts on memory already there (an erasure, a
    review, a preview), so a data dir that is not one is refused before anything is created in it."""
    settings = resolve(settings_for(data_dir, broker=broker, **overrides))
    if existing:
        _require_data_dir(settings.bus, data_dir)
    deployment = await open_deployment(settings, pipeline=not (settings.bus or "").startswith("kafka://"))
    async with deployment:
        yield deployment


def emit_json(obj: Any) -> None:
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


def sample_path() -> Path:
    return Path(str(resources.files("altm").joinpath("data/sample_conversation.jsonl")))


class PipelineProgress:
    """Progress bars of a long command: lines (or events) published against their total, records the pipeline
    processed as they go (their total is not known in advance). Feed it the callbacks ingest and replay give."""

    def __init__(self, what: str, total: int | None) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console,
                                 transient=False)
        self.published = self.progress.add_task(f"{what} published", total=total, rate="")
        self.processed = self.progress.add_task("records processed", total=None, rate="")
        self._start = time.monotonic()

    def __enter__(self) -> PipelineProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, kind: str, n: int) -> None:
        """``published``: lines published so far; ``events``: events a replay read; ``processed``/``records``:
        how many more records the pipeline processed."""
        elapsed = max(time.monotonic() - self._start, 1e-6)
        if kind == "events":  # a replay: every event of the log was read (the total is known now)
            self.progress.update(self.published, total=n, completed=n, rate="")
        elif kind == "published":
            self.progress.update(self.published, completed=n, rate=f"{n / elapsed:,.0f}/s")
        else:
            self.progress.advance(self.processed, n)
            done = self.progress.tasks[self.processed].completed
            self.progress.update(self.processed, rate=f"{done / elapsed:,.0f}/s")

    def completed(self) -> tuple[float, float]:
        return self.progress.tasks[self.published].completed, self.progress.tasks[self.processed].completed
