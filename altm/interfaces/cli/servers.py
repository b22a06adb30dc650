"""Processes: ``serve`` (HTTP API), ``mcp-server``, ``worker`` (Kafka), and ``keys`` for their API keys."""

from __future__ import annotations

from typing import Annotated

import typer

from altm.interfaces.cli._common import DEFAULT_DATA_DIR, KNOWN_ERRORS, DataDir, fail, run, settings_for
from altm.wiring import run_worker

keys_app = typer.Typer(help="API keys for the HTTP API and streamable-HTTP MCP.", no_args_is_help=True)


def keys_create(
    name: Annotated[str, typer.Option(help="A label for the key")],
    scope_prefix: Annotated[str, typer.Option(help="TENANT[/WORKSPACE[/USER[/AGENT]]] the key may act on")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    admin: Annotated[bool, typer.Option(help="May read stats across scopes")] = False,
) -> None:
    """Create an API key; it is printed once, only its SHA-256 is stored."""
    from altm.interfaces.serve import keystore  # the servers' modules load FastAPI and MCP: only when used

    try:
        key = keystore(settings_for(data_dir)).create(name, scope_prefix, admin=admin)
    except ValueError as exc:
        fail(str(exc))
    typer.echo(key)


def serve(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    host: Annotated[str, typer.Option(help="Bind address (loopback by default)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8420,
    broker: Annotated[str | None, typer.Option(help="kafka://HOST:PORT: serve a Kafka deployment")] = None,
    partitions: Annotated[int | None, typer.Option(help="Partition count (Kafka deployments)")] = None,
) -> None:
    """The HTTP API: with the embedded pipeline in the same process, or (with --broker) as the retrieval
    service of a Kafka deployment, reading the workers' shards and publishing to Kafka."""
    from altm.interfaces.serve import serve_http

    run(serve_http(settings_for(data_dir, broker=broker, partitions=partitions), host, port))


def mcp_server(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    profile: Annotated[str, typer.Option(help="runtime or admin")] = "runtime",
    transport: Annotated[str, typer.Option(help="stdio or streamable-http")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8421,
    broker: Annotated[str | None, typer.Option(help="kafka://HOST:PORT: serve a Kafka deployment")] = None,
) -> None:
    """The MCP server (with the embedded pipeline in-process, or over a Kafka deployment)."""
    if profile not in ("runtime", "admin"):
        fail("--profile is runtime or admin")
    if transport not in ("stdio", "streamable-http"):
        fail("--transport is stdio or streamable-http")
    from altm.interfaces.serve import serve_mcp

    run(serve_mcp(settings_for(data_dir, broker=broker), profile, transport, host, port))  # type: ignore[arg-type]


def worker(
    broker: Annotated[str, typer.Option(help="kafka://HOST:PORT")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    partitions: Annotated[int | None, typer.Option(help="Partition count of every topic")] = None,
) -> None:
    """Run a worker over Kafka (processors and the writer for the partitions it owns)."""
    try:
        run_worker(settings_for(data_dir, broker=broker, partitions=partitions))
    except KNOWN_ERRORS as exc:  # e.g. shards of another log: one line for the operator, no traceback
        fail(str(exc))


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command("mcp-server")(mcp_server)
    app.command()(worker)
    keys_app.command("create")(keys_create)
    app.add_typer(keys_app, name="keys")


__all__ = ["register"]
