"""Finding (red team 19, operability): ``ALTM_DATA_DIR`` — listed first among the README's settings, and set by the
Dockerfile (``ENV ALTM_DATA_DIR=/data``, the image's only ``VOLUME``) — is ignored by every ``altm`` command: the
``--data-dir`` option's default, ``altm-data`` in the working directory, is always passed explicitly and overrides
the environment. ``altm stats`` with ``ALTM_DATA_DIR`` pointing at a data dir says "altm-data is not an ALTM data
dir"; ``altm keys create`` / ``altm ingest`` / ``altm worker`` silently make a new ``./altm-data`` (in a container,
outside the volume, lost with the container) and exit 0.

Root cause: altm/interfaces/cli/_common.py:33-34 (``DEFAULT_DATA_DIR`` is the model default, and the ``DataDir``
option has no ``envvar``), and ``settings_for`` (:58-60) passes ``data_dir=`` explicitly, which pydantic-settings
ranks above the environment.

Expected: without ``--data-dir``, a command acts on ``ALTM_DATA_DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app

runner = CliRunner()
LINE = {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
        "session_id": "s1", "turn_id": "s1-t1", "role": "user", "content": "We use PostgreSQL 15.",
        "timestamp": "2026-11-02T09:00:00Z"}


def test_commands_without_data_dir_use_altm_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "data"
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(LINE) + "\n", encoding="utf-8")
    env = {"ALTM_EMBEDDER": "none"}
    made = runner.invoke(app, ["ingest", str(source), "--data-dir", str(data_dir)], env=env)
    assert made.exit_code == 0, made.output
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env["ALTM_DATA_DIR"] = str(data_dir)

    stats = runner.invoke(app, ["stats", "--json"], env=env)
    key = runner.invoke(app, ["keys", "create", "--name", "ops", "--scope-prefix", "acme"], env=env)

    assert stats.exit_code == 0, f"ALTM_DATA_DIR={data_dir} ignored: {stats.output}"
    assert key.exit_code == 0, key.output
    assert (data_dir / "api_keys.json").exists(), "the key went elsewhere"
    assert not (elsewhere / "altm-data").exists(), "a data dir was made in the working directory"
