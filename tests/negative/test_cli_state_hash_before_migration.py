"""``altm state-hash`` on a data dir written by the previous release (not yet opened for writing) dies with an
uncaught ``ShardError`` traceback, where ``altm stats`` and ``altm memories`` print one line saying how to migrate.

Finding: after an upgrade, a shard still at schema 20 is refused by a read-only open with a ``ShardError`` that
says what to do ("open the data dir once for writing (e.g. `altm sweep --data-dir DIR`) to migrate it",
``Shard._open``, altm/store/_shard.py:55-63). ``state_rows`` (altm/store/_stats.py:51-64) opens each shard
read-only and converts only ``sqlite3.OperationalError`` into a ``DataDirError``, and the command
(``state_hash_cmd``, altm/interfaces/cli/inspect.py:75-80) catches ``DataDirError`` only: it does not run through
``run`` (altm/interfaces/cli/_common.py:69-74), whose ``KNOWN_ERRORS`` hold ``ShardError``. The ``ShardError``
escapes as a traceback (exit 1). ``altm state-hash`` is what an operator runs to compare a data dir with its
replay or across an upgrade (README, Re-derivation), so the first run after upgrading the binary is the one that
crashes. A damaged shard (``Shard.open`` wraps its SQLite error in a ``ShardError``) ends the same way.

Reproduction: 6802e9a ingests the sample conversation into a data dir; today's ``altm state-hash --data-dir DIR``.

Expected: exit code != 0, no uncaught exception, and one line on stderr naming the shard and how to migrate it
(``schema version 20`` ... ``open the data dir once for writing``), as ``altm stats`` prints.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from altm.interfaces.cli import app
from tests.support.old_release import run_old

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}

_OLD_SAMPLE = """
import sys
from typer.testing import CliRunner
from altm.interfaces.cli import app, sample_path

done = CliRunner().invoke(app, ["ingest", "--data-dir", sys.argv[1], str(sample_path())],
                          env={"ALTM_EMBEDDER": "none"})
assert done.exit_code == 0, done.output
"""


def test_state_hash_of_a_data_dir_not_yet_migrated_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run_old(_OLD_SAMPLE, str(data))
    stats = runner.invoke(app, ["stats", "--data-dir", str(data)], env=ENV)
    assert stats.exit_code != 0 and "open the data dir once for writing" in stats.output, stats.output
    result = runner.invoke(app, ["state-hash", "--data-dir", str(data)], env=ENV)
    assert result.exit_code != 0, result.output
    # actual: uncaught ShardError (a traceback)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")
    assert "schema version 20" in result.output and "open the data dir once for writing" in result.output, (
        result.output)
