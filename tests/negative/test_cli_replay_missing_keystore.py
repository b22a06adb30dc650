"""``altm replay`` from a data dir whose key store is missing (``keys.db`` lost or not copied with a backup)
crashes with a ``KeyStoreError`` traceback half-way, blames the *target's* key store, and leaves the target
non-empty, so the same command, run again once the key store is back, is refused ("is not empty").

What a user expects: the log's records are sealed with the source's data keys; without them nothing can be
replayed, and that is knowable before anything is written. A one-line error naming the source's missing
key store, exit ≠ 0, and ``--into`` left as it was (absent or empty), so the operator can restore keys.db
and rerun the same command.

Actual: altm/wiring/_replay.py:86-109 reads the source log (records stay sealed), creates the target
deployment, republishes, and the target's runtime fails to open them: "KeyStoreError: data key … is not in
the key store TARGET/keys.db" (not in the CLI's KNOWN_ERRORS, so a traceback); the target holds log.db,
keys.db, shards/.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from altm.interfaces.cli import app, sample_path

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}


def test_replay_without_the_source_key_store_fails_cleanly_and_can_be_rerun(tmp_path: Path) -> None:
    source = tmp_path / "source"
    assert runner.invoke(app, ["ingest", "--data-dir", str(source), str(sample_path())], env=ENV).exit_code == 0
    aside = tmp_path / "aside"
    aside.mkdir()
    for f in source.glob("keys.db*"):
        f.rename(aside / f.name)  # the key store is missing
    target = tmp_path / "rebuilt"

    result = runner.invoke(app, ["replay", "--data-dir", str(source), "--into", str(target)], env=ENV)
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")
    assert not target.exists() or not any(target.iterdir()), (
        f"a failed replay left {sorted(p.name for p in target.iterdir())} in --into")

    for f in aside.iterdir():
        f.rename(source / f.name)  # the key store is back: the same command now works
    again = runner.invoke(app, ["replay", "--data-dir", str(source), "--into", str(target)], env=ENV)
    assert again.exit_code == 0, again.output
