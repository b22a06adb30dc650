"""The ``altm`` command line (typer): one module per command group, shared helpers in ``_common``."""

from __future__ import annotations

import typer

from altm.interfaces.cli import admin, demo, ingest, inspect, recall, sealing, servers
from altm.interfaces.cli._common import err, sample_path

app = typer.Typer(help="ALTM: long-term memory for LLM agents, as a streaming pipeline.", no_args_is_help=True)
for group in (ingest, inspect, recall, admin, servers, demo, sealing):
    group.register(app)


def main() -> None:
    app()


__all__ = ["app", "err", "main", "sample_path"]
