"""The master key file is never flushed to disk before data keys wrapped by it are committed.

Finding: ``load_master_key`` (first start, no ``ALTM_MASTER_KEY``) writes ``keys.db.master`` through a plain
``os.fdopen(...).write`` and closes it; ``altm sealing rotate-master`` writes the new key to
``keys.db.master.new`` the same way, then commits the rewrap of every data key under it (SQLite syncs that
commit) and renames the file over the old one. Neither the file nor its directory is ever ``fsync``'ed. On a
power loss or kernel crash shortly after, the file system can keep the key store's durable commit and lose
the master file's content (a new file's delayed allocation: a zero-length or missing file), or the rename.

Why it matters: README says it plainly — losing the master key makes the whole log unreadable (nothing can be
replayed or restored; every key it wraps is gone, which is a crypto-shredding of everything). A rotation is
the moment that risk is taken by design: the old key is no longer any use.

Expected: the master key file (and the pending file of a rotation) is ``fsync``'ed, and its directory after
creating or renaming it, before any data key is wrapped with the key it holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from altm.bus.sealing import Owner, SqliteKeyStore, load_master_key
from altm.core.settings import Settings
from altm.interfaces.cli import app


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``os.fsync`` was called on (through /proc/self/fd), in order."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name the synced files")
def test_a_new_master_key_file_is_synced_before_it_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALTM_MASTER_KEY", raising=False)
    synced = _record_fsyncs(monkeypatch)
    path = tmp_path / "data" / "keys.db.master"
    key = load_master_key(path, create=True)
    assert len(key) == 32 and path.exists()
    assert str(path) in synced, f"the new master key file was never fsync'ed (fsync calls: {synced})"
    assert str(path.parent) in synced, "the directory entry of the new master key file was never fsync'ed"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name the synced files")
def test_a_rotation_syncs_the_new_master_key_before_the_rewrap_commits(settings: Settings,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALTM_MASTER_KEY", raising=False)
    keys = SqliteKeyStore(settings.data_dir / "keys.db")
    keys.current(Owner("acme/platform/dana", "coder", "s1"))
    keys.close()
    synced = _record_fsyncs(monkeypatch)
    rotated = CliRunner().invoke(app, ["sealing", "rotate-master", "--data-dir", str(settings.data_dir)])
    assert rotated.exit_code == 0, rotated.output
    pending = str(settings.data_dir / "keys.db.master.new")
    assert pending in synced, f"the new master key was never fsync'ed before the rewrap (fsync calls: {synced})"
    assert str(settings.data_dir) in synced, "the rename over keys.db.master was never made durable"
