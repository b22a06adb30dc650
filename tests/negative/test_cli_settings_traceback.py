"""Finding (red team 19, operability): a bad ``ALTM_*`` value in the environment, or an option the settings refuse
(``ALTM_PARTITIONS=0``, ``ALTM_POLL_BATCH=abc``, ``ALTM_DEFER_BACKOFF_S=nan``, ``altm ingest --partitions 0``), ends
every ``altm`` command with a 60-line Rich traceback of pydantic internals instead of one ``error:`` line naming the
variable; ``altm serve`` / ``altm mcp-server --transport streamable-http`` with ``--port 70000`` start the
pipeline and then die with an ``OverflowError`` traceback.

Root cause: ``settings_for`` (altm/interfaces/cli/_common.py:58-60) builds ``Settings`` outside ``run`` (:70-75), as
an argument evaluated before it, so the ``ValidationError`` (a ``ValueError``, which ``run`` would print in one line)
escapes; the commands' ``--port`` options (altm/interfaces/cli/servers.py:34, 55) have no ``min``/``max``.

Expected: exit code != 0, an ``error:`` line, no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app

runner = CliRunner()


@pytest.mark.parametrize(("env", "args"), [
    ({"ALTM_PARTITIONS": "0"}, ["stats"]),
    ({"ALTM_POLL_BATCH": "abc"}, ["state-hash"]),
    ({"ALTM_DEFER_BACKOFF_S": "nan"}, ["log", "tail", "turns"]),
    ({"ALTM_PARTITIONS": "many"}, ["sealing", "status"]),
    ({}, ["ingest", "--partitions", "0", "FILE"]),
])
def test_a_refused_setting_is_one_error_line(tmp_path: Path, env: dict[str, str], args: list[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("{}\n", encoding="utf-8")
    argv = [str(source) if a == "FILE" else a for a in args] + ["--data-dir", str(tmp_path / "data")]
    result = runner.invoke(app, argv, env={"ALTM_EMBEDDER": "none", **env})
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__} escaped the command: {result.exception}")
    assert "error:" in result.output


def test_serve_port_out_of_range_is_one_error_line(tmp_path: Path) -> None:
    env = {**os.environ, "ALTM_EMBEDDER": "none"}
    done = subprocess.run([sys.executable, "-m", "altm", "serve", "--data-dir", str(tmp_path / "data"),
                           "--port", "70000"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-800:]
