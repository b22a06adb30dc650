"""Export JSON Schemas of the event and memory models, for producers in other languages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from altm.core.cycle import RuntimeCycle
from altm.core.events import ChangeEvent, ControlEvent, DeadLetter, Event, TurnEvent
from altm.core.memory import MemoryUnit
from altm.core.proposals import ProposalEvent

_MODELS: dict[str, type[BaseModel]] = {
    "turn_event": TurnEvent,
    "control_event": ControlEvent,
    "change_event": ChangeEvent,
    "dead_letter": DeadLetter,
    "memory_unit": MemoryUnit,
    "runtime_cycle": RuntimeCycle,
}
_UNIONS: dict[str, TypeAdapter[Any]] = {
    "proposal_event": TypeAdapter(ProposalEvent),  # one model per op, discriminated by ``op``
    "event": TypeAdapter(Event),
}


def render_schemas() -> dict[str, str]:
    """File name → JSON text of every exported schema (deterministic)."""
    schemas: dict[str, Any] = {name: model.model_json_schema() for name, model in _MODELS.items()}
    schemas.update({name: union.json_schema() for name, union in _UNIONS.items()})
    return {f"{name}.schema.json": json.dumps(s, indent=2, sort_keys=True) + "\n" for name, s in schemas.items()}


def default_dir() -> Path:
    """``schemas/`` of the working directory: the repository keeps the exported files there."""
    return Path("schemas")


def export_schemas(out_dir: Path | None = None) -> list[Path]:
    out_dir = out_dir or default_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_schemas().items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def stale_schemas(out_dir: Path | None = None) -> list[str]:
    """Names of exported files that are missing or differ from the models (empty when up to date)."""
    out_dir = out_dir or default_dir()
    stale = []
    for name, text in render_schemas().items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    return stale
