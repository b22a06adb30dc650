"""``altm ingest`` of a file whose name is not valid UTF-8 crashes with a traceback after publishing its first
batch, and every rerun crashes the same way: the file can never be ingested.

Finding: the resume marker of an ingest (``IngestMarker``, altm/app/_input_file.py) already expects such names
when it derives its key (``str(source.resolve()).encode("utf-8", errors="surrogateescape")``, line 98), but
``IngestMarker.save`` (altm/app/_input_file.py:106-110) writes ``{"source": str(self.source), ...}`` with
``orjson.dumps``, and orjson refuses a ``str`` holding surrogate escapes (``TypeError: str is not valid UTF-8:
surrogates not allowed``). On Linux a file name is bytes; Python hands a name that is not UTF-8 (a Latin-1
``caf\\xe9.jsonl`` from an old system, a zip archive's cp437 names, an SMB share) to ALTM as a ``str`` with
surrogate escapes. ``publish_file`` calls ``marker.save`` after the first batch is already published
(altm/app/ingest.py:124-128), the ``TypeError`` is not one of the CLI's known errors (``KNOWN_ERRORS``,
altm/interfaces/cli/_common.py:40), so the command dies with a Python traceback before the pipeline runs; no
marker is saved, so a rerun publishes the same batch again and dies again.

Reproduction: a two-line flat transcript saved as ``b"caf\\xe9.jsonl"``; ``altm ingest --data-dir D <that
path>`` → exit 1 with ``TypeError: str is not valid UTF-8: surrogates not allowed`` from
``_input_file.py`` ``save``; ``altm memories --data-dir D`` lists nothing.

Expected: the name of the input file does not matter: the ingest completes (exit 0, "2 published"), both turns
are stored (e.g. the marker writes the source path with ``os.fsencode(...).decode("utf-8", "backslashreplace")``
or leaves it out; it is only informational).
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app
from tests.support.rows import rows

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}


def _line(i: int) -> bytes:
    return orjson.dumps({"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
                         "session_id": "s1", "turn_id": f"t{i}", "role": "user",
                         "content": f"message {i} about the ZEBRA{i} rollout",
                         "timestamp": f"2026-11-02T09:0{i}:00Z"}) + b"\n"


def test_a_file_whose_name_is_not_utf8_is_ingested(tmp_path: Path) -> None:
    src = tmp_path / os.fsdecode(b"caf\xe9.jsonl")  # a Latin-1 name: '\udce9' once Python decodes it
    try:
        src.write_bytes(_line(1) + _line(2))
    except (OSError, UnicodeError):
        pytest.skip("this file system does not take file names that are not UTF-8")
    data = tmp_path / "data"
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"ingest crashed: {type(result.exception).__name__}: {result.exception}")
    assert result.exit_code == 0, result.output
    assert "2 published" in " ".join(result.output.split()), result.output
    stored = sorted(r["source_id"] for r in rows(data, "SELECT source_id FROM memories WHERE layer='L0'"))
    assert stored == ["t1", "t2"]
