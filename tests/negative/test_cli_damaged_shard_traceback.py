"""One damaged shard file makes the CLI die with a bare SQLite traceback that names no file: ``altm stats``,
``memories``, ``sweep`` and ``ingest`` print ``sqlite3.DatabaseError: file is not a database`` (garbage bytes),
``database disk image is malformed`` (a truncated file) or ``OperationalError: disk I/O error`` / ``unable to open
database file`` (a directory where the file should be), and the operator cannot tell which of the data dir's
files is at fault.

Finding: ``Shard.open`` (altm/store/_shard.py:31-61) runs its first statements (``PRAGMA journal_mode=WAL`` and the
migration for a writable shard, the schema-version query for a read-only one) without catching
``sqlite3.DatabaseError``, so the error carries SQLite's message only, not ``self.path``; and the CLI's
``KNOWN_ERRORS`` (altm/interfaces/cli/_common.py:39-40) hold ``ShardError`` but no SQLite error, so ``run``
(altm/interfaces/cli/_common.py:69-74) lets it through as an uncaught exception (a traceback, exit 1). A shard
with no memories at all (a partition nobody's data went to) stops every whole-data-dir command the same way.

Reproduction: ``altm ingest`` the sample conversation; overwrite ``shards/shard-0000.db`` with garbage, cut it
in half, or replace it by a directory; run ``altm stats --data-dir DIR`` (or ``memories``, ``sweep``,
``ingest``).

Expected: one line on stderr naming the damaged shard (``…/shards/shard-0000.db``) and what is wrong with it,
exit code ≠ 0, no traceback (e.g. ``Shard.open`` wraps ``sqlite3.DatabaseError`` in a ``ShardError`` with the
path, which the CLI already prints as one line).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app, sample_path

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
VICTIM = "shard-0000.db"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("ingested") / "data"
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(sample_path())], env=ENV)
    assert result.exit_code == 0, result.output
    return data


def _damaged(source: Path, target: Path, how: str) -> Path:
    shutil.copytree(source, target)
    shard = target / "shards" / VICTIM
    for leftover in (shard.with_name(shard.name + "-wal"), shard.with_name(shard.name + "-shm")):
        leftover.unlink(missing_ok=True)
    if how == "garbage":
        shard.write_bytes(b"\x00not a database\x00" * 512)
    elif how == "truncated":
        whole = shard.read_bytes()
        shard.write_bytes(whole[: len(whole) // 2])
    else:
        shard.unlink()
        shard.mkdir()
    return target


@pytest.mark.parametrize("how", ["garbage", "truncated", "directory"])
@pytest.mark.parametrize("command", [["stats"], ["memories"], ["sweep"], ["ingest", str(sample_path())]],
                         ids=["stats", "memories", "sweep", "ingest"])
def test_a_damaged_shard_is_named_in_one_line(ingested: Path, tmp_path: Path, how: str, command: list[str]) -> None:
    data = _damaged(ingested, tmp_path / "data", how)
    result = runner.invoke(app, [*command, "--data-dir", str(data)], env=ENV)
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")
    assert VICTIM in result.output, f"the error does not name the damaged shard: {result.output!r}"
