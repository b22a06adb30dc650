"""``altm ingest`` given a path it cannot read as a file (a directory) prints a Python traceback and leaves a
new data dir behind; ``altm validate`` of a missing file prints a traceback.

What a user expects: ``altm ingest`` already answers a missing file with one line ("error: no such file: …")
and every command promises "no traceback for errors a user can act on" (``_common.fail``). A directory given
by mistake (``altm ingest --data-dir d transcripts/`` instead of ``transcripts/day1.jsonl``) should be the
same one-line error, exit ≠ 0, with nothing created under ``--data-dir`` (the file is checked before the
deployment is opened). ``altm validate missing.jsonl`` should say the file does not exist, not raise.

Actual: ``ingest`` checks only ``file.exists()`` (altm/interfaces/cli/ingest.py:56), then opens the data dir
for writing (creating log.db, keys.db, shards/) and ``_line_count`` → ``file.open('rb')`` raises
IsADirectoryError, which is not in ``KNOWN_ERRORS``; ``validate`` has no check at all (ingest.py:83).
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner, Result

from altm.interfaces.cli import app

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}


def _clean_failure(result: Result) -> None:
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")


def test_ingest_of_a_directory_is_a_one_line_error_and_creates_no_data_dir(tmp_path: Path) -> None:
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    data = tmp_path / "data"
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(transcripts)], env=ENV)
    _clean_failure(result)
    assert not data.exists(), f"a refused ingest created {sorted(p.name for p in data.iterdir())}"


def test_validate_of_a_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "missing.jsonl")], env=ENV)
    _clean_failure(result)
