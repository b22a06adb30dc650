"""A data dir written by a newer ALTM (shard schema version above this one's) gets wrong advice from the
reading commands and a traceback from the writing ones.

What a user expects: one clear line, exit ≠ 0, saying the data dir is newer than this ALTM and to upgrade
ALTM — from every command. Actual: ``altm stats``/``memories``/``review list`` say "has schema version 999,
this ALTM reads N: open the data dir once for writing (e.g. `altm sweep --data-dir DIR`) to migrate it" — advice
that cannot work (a migration never goes down) — and ``altm sweep``/``ingest``/``erase`` then die with a
``RuntimeError`` traceback ("shard schema version 999 is newer than this ALTM"), which is not in the CLI's
``KNOWN_ERRORS``.

Suspected cause: altm/store/_shard.py:41-45 (read-only open: any version != LATEST gets the "migrate" advice)
and altm/store/_migrations.py:49-52 (raises RuntimeError instead of ShardError).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from altm.interfaces.cli import app, sample_path

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}


def _newer_data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert runner.invoke(app, ["ingest", "--data-dir", str(data), str(sample_path())], env=ENV).exit_code == 0
    for shard in sorted((data / "shards").glob("shard-*.db")):
        with sqlite3.connect(shard) as conn:
            conn.execute("INSERT INTO schema_version (version, name, applied_at) "
                         "VALUES (999, '0999_from_the_future.sql', '2030-01-01')")
    return data


def test_a_reading_command_does_not_advise_a_migration_that_cannot_work(tmp_path: Path) -> None:
    data = _newer_data_dir(tmp_path)
    result = runner.invoke(app, ["stats", "--data-dir", str(data)], env=ENV)
    assert result.exit_code != 0
    assert "migrate" not in result.output, result.output
    assert "upgrade" in result.output.lower() or "newer" in result.output.lower(), result.output


def test_a_writing_command_on_a_newer_data_dir_is_a_one_line_error(tmp_path: Path) -> None:
    data = _newer_data_dir(tmp_path)
    result = runner.invoke(app, ["sweep", "--data-dir", str(data)], env=ENV)
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")
