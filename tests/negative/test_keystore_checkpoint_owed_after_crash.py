"""A data key destroyed by an erasure stays on disk in the key store, in its file and its write-ahead log, for as
long as the next process runs when the erasing process died before its checkpoint.

Finding (crash consistency, red team round 16): ``SqliteKeyStore._destroy`` (altm/bus/sealing/_keys.py:367-384)
commits the deletion and then runs ``wal_checkpoint(TRUNCATE)`` so that neither the key store's file (the old page
that held the wrapped key) nor its write-ahead log keeps a copy. A SIGKILL between the two leaves the old page in
``keys.db`` and new frames in ``keys.db-wal``. The debt is not recorded anywhere: ``_checkpoint_owed`` starts False
in every new process (altm/bus/sealing/_keys.py:216), so the restarted deployment (``altm serve``, a worker, the
Python API) never checkpoints while it runs: it only reads keys for a turn of another session, and its periodic
``destroy_retired`` truncates nothing when it destroys nothing. The wrapped key of the erased session stays
readable beside the master key (``keys.db.master``) until some later erasure or the last close: whoever copies
the data dir meanwhile unwraps it and opens every shredded record of the log. The same fix was made for the
shards' own truncation (``Shard.open`` sets ``_truncation_owed``, test_erasure_wal_owed_lost_at_reopen.py) and for
a reader that held the checkpoint off (test_keystore_destroyed_key_left_in_wal.py), not for a crash.

Expected: a writable key store opened after a crash completes the checkpoint it may owe (as a shard does), so once
the restarted deployment has written, no file of the data dir holds the destroyed key's wrapped bytes.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from altm.core.settings import Settings
from altm.wiring import open_embedded
from tests.support.memories import runtime_of, store_with
from tests.support.turns import make_turn

ROOT = Path(__file__).resolve().parents[2]

_KILLED_BEFORE_CHECKPOINT = textwrap.dedent("""
    import asyncio, os, signal, sys
    from pathlib import Path
    from altm.bus.sealing._keys import SqliteKeyStore
    from altm.core.settings import Settings
    from altm.wiring import open_embedded
    from tests.support.turns import SCOPE

    def die(self, attempts=20):  # killed right after the key's deletion committed, before the checkpoint
        os.kill(os.getpid(), signal.SIGKILL)
    SqliteKeyStore._checkpoint = die

    async def main():
        s = Settings(data_dir=Path(sys.argv[1]), partitions=4, embedder="none")
        async with open_embedded(s) as deployment:
            await deployment.app.erase(SCOPE, "session", session_id="s-secret")
            await deployment.runtime.run_until_idle()
    asyncio.run(main())
""")


def _files_holding(data_dir: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file()
                  and needle in p.read_bytes())


async def test_a_key_destroyed_just_before_a_crash_leaves_the_key_store_files_once_it_runs_again(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, "My vault code is ZEBRA-4471-SECRET, keep it.", session="s-secret"),
             make_turn(2, "Unrelated: the billing deadline is March 3.", session="s1")]
    async with store_with(s, turns):
        pass
    keys = sqlite3.connect(f"file:{s.data_dir / 'keys.db'}?mode=ro", uri=True)
    try:
        (wrapped,) = keys.execute("SELECT wrapped FROM data_keys WHERE session = 's-secret'").fetchone()
    finally:
        keys.close()
    wrapped = bytes(wrapped)
    assert _files_holding(s.data_dir, wrapped) == ["keys.db"]

    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", _KILLED_BEFORE_CHECKPOINT,
                                                    str(s.data_dir)],
                                   cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                                   text=True, timeout=120)
    assert done.returncode == -9, done.stderr[-2000:]
    keys = sqlite3.connect(f"file:{s.data_dir / 'keys.db'}?mode=ro", uri=True)
    try:  # the erasure's key destruction had committed
        assert keys.execute("SELECT COUNT(*) FROM data_keys WHERE session = 's-secret'").fetchone()[0] == 0
    finally:
        keys.close()

    async with open_embedded(s) as deployment:  # the deployment runs again (a server, a worker)
        rt = runtime_of(deployment)
        await rt.run_until_idle()
        await rt.publish([make_turn(3, "Another thing: lunch with the vendor on Friday.", session="s1")])
        await rt.run_until_idle()
        held = _files_holding(s.data_dir, wrapped)
    assert held == [], f"the destroyed key's wrapped bytes are still in {held} while the deployment runs"
