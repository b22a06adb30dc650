"""What every command group shares: options, settings, scope parsing, output, and one way to fail."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import orjson
import typer
from rich.console import Console

from altm.app import ProtocolError
from altm.bus import BusError
from altm.core import DecodeError, Scope, Settings
from altm.pipeline import LogBindingError
from altm.store import DataDirError, ShardError
from altm.wiring import Deployment, ReadOnlyError, WiringError, open_deployment, resolve

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DEFAULT_DATA_DIR = Settings.model_fields["data_dir"].default
DataDir = Annotated[Path, typer.Option("--data-dir", help="ALTM data dir (log, shards, indexes)")]
ScopeOpt = Annotated[str, typer.Option("--scope", help="TENANT/WORKSPACE/USER/AGENT")]
BrokerOpt = Annotated[str | None, typer.Option(
    "--broker", help="kafka://HOST:PORT: act on a Kafka deployment (default: the bus the data dir recorded)")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON")]

KNOWN_ERRORS = (ProtocolError, BusError, LogBindingError, DataDirError, ShardError, WiringError, ReadOnlyError,
                DecodeError, ValueError)
T = TypeVar("T")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line to stderr and exit (no traceback for errors a user can act on)."""
    err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    raise typer.Exit(code)


def settings_for(data_dir: Path, **overrides: Any) -> Settings:
    """Settings from the environment with the command's options on top (``None`` means not given)."""
    return Settings(data_dir=data_dir, **{k: v for k, v in overrides.items() if v is not None})


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


@asynccontextmanager
async def deployment_for(data_dir: Path, broker: str | None = None, **overrides: Any) -> AsyncIterator[Deployment]:
    """The deployment a writing command acts on: the embedded pipeline in this process, or a Kafka client
    (``--broker``, or the bus the data dir recorded) whose workers apply what it publishes. Call
    ``settle()`` to wait for that."""
    settings = resolve(settings_for(data_dir, broker=broker, **overrides))
    deployment = await open_deployment(settings, pipeline=not (settings.bus or "").startswith("kafka://"))
    async with deployment:
        yield deployment


def emit_json(obj: Any) -> None:
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


def sample_path() -> Path:
    return Path(str(resources.files("altm").joinpath("data/sample_conversation.jsonl")))
