"""An erasure whose process dies between its commit and its purge leaves the erased words in the word index's
segments after the restart, until later writes to that shard happen to make FTS5 automerge them away.

Finding (crash consistency, red team round 16): ``Writer.apply_batch`` commits the erasure's transaction and only
then calls ``shard.purge()`` (altm/pipeline/writer/_apply.py:201-203), which runs FTS5 ``optimize`` on both text
indexes so that no index segment keeps the erased terms (FTS5 deletes by appending delete markers; the old
segment, which holds the words, stays until a merge). The purge is owed only in memory: ``Shard.open``
(altm/store/_shard.py:87-89) remembers a possibly owed write-ahead-log truncation after a restart, but nothing
records, or redoes, the owed ``optimize``. A SIGKILL (OOM, a power loss, a deploy's kill) in that window leaves
the erased message's words ("zebra", "4471") in ``memories_fts_data`` of the shard file, readable by anyone with
the file, after the deployment restarted and wrote again (measured: still there after one more turn of the
shard's user, gone after five, when FTS5's automerge rewrote the segment; a shard nobody writes to again, e.g.
after ``altm erase --user`` of its only user, keeps them for good). README (Erasure): "after an erasure the word indexes
are merged and the write-ahead log truncated"; DESIGN 1.9: "no readable trace in any ... index segment".

Expected: an erasure's purge is durable work (recorded in the erasure's transaction, or run at every writable
open as the log truncation is), so a restart after the kill merges the indexes and the words are on no file.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from altm.core.settings import Settings
from altm.wiring import open_embedded
from tests.support.memories import runtime_of
from tests.support.turns import make_turn

ROOT = Path(__file__).resolve().parents[2]

_KILLED_MID_ERASURE = textwrap.dedent("""
    import asyncio, os, signal, sys
    from pathlib import Path
    from altm.core.settings import Settings
    from altm.store._shard import Shard
    from tests.support.memories import store_with
    from tests.support.turns import SCOPE, make_turn

    def die(self):  # the process is killed right after the erasure committed, before its purge
        os.kill(os.getpid(), signal.SIGKILL)
    Shard.purge = die

    async def main():
        s = Settings(data_dir=Path(sys.argv[1]), partitions=4, embedder="none")
        turns = [make_turn(1, "My vault code is ZEBRA-4471-SECRET, keep it.", session="s-secret"),
                 make_turn(2, "Unrelated: the billing deadline is March 3.", session="s1")]
        async with store_with(s, turns) as (rt, app):
            await app.erase(SCOPE, "session", session_id="s-secret")
            await rt.run_until_idle()
    asyncio.run(main())
""")


def _files_holding(data_dir: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file()
                  and needle in p.read_bytes())


async def test_an_erasure_killed_before_its_purge_leaves_no_erased_word_in_the_index(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", _KILLED_MID_ERASURE, str(s.data_dir)],
                                   cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                                   text=True, timeout=120)
    assert done.returncode == -9, done.stderr[-2000:]  # killed at the purge: the erasure itself had committed
    # the deployment starts again, catches up and writes again
    async with open_embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.run_until_idle()
        await rt.publish([make_turn(3, "Another thing: lunch with the vendor on Friday.", session="s1")])
        await rt.run_until_idle()
    assert _files_holding(s.data_dir, b"ZEBRA-4471") == []  # the rows went with the committed erasure
    assert _files_holding(s.data_dir, b"zebra") == [], "the erased word stays in the word index's segments"
