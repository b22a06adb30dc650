"""Review rt29: Readers.give_back appended a connection to the shard's idle list, releases its lock, and only then
records it in the shard set's LRU (IdleReaders.given_back). A thread that borrows it in that window calls
``taken`` before the record exists, so the LRU ends up naming a connection that is borrowed; and when that
connection is given back again, assigning an existing OrderedDict key does not move it to the end, so the
connection just used is the first the LRU evicts. The hook starts the "other thread's" borrow where the window
was and waits for it a moment: before the fix it borrowed in the window; now ``Readers`` tells the LRU under
its lock, and the borrow waits until the connection is recorded, then takes it off the list.

Now the LRU is told under the shard's lock (one order for the two locks) and a connection given back again
moves to the end."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from altm.store._reading import IdleReaders, Readers


class _WindowHook(IdleReaders):
    """Starts ``between`` once on another thread at the start of given_back (where the window was) and waits
    for it at most 0.2 s: before the fix it ran there; now it waits for the shard's lock."""

    def __init__(self, kept: int) -> None:
        super().__init__(kept)
        self.between: Callable[[], object] | None = None
        self.threads: list[threading.Thread] = []

    def given_back(self, readers: Readers, conn: sqlite3.Connection) -> list[tuple[Readers, sqlite3.Connection]]:
        hook, self.between = self.between, None
        if hook is not None:
            thread = threading.Thread(target=hook)
            thread.start()
            thread.join(0.2)
            self.threads.append(thread)
        return super().given_back(readers, conn)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(5)


def _connect() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", check_same_thread=False)


def test_a_connection_borrowed_in_the_window_is_not_listed_idle() -> None:
    idle = _WindowHook(kept=64)
    readers = Readers(_connect, idle)
    a = readers.borrow()
    borrowed: list[sqlite3.Connection] = []
    idle.between = lambda: borrowed.append(readers.borrow())  # thread 2 borrows a in the window
    readers.give_back(a, sound=True)
    idle.join()
    assert borrowed == [a]  # thread 2 holds a now
    assert id(a) not in idle._lru, "the shard set's LRU lists as idle a connection another thread has borrowed"


def test_the_connection_given_back_last_is_not_evicted_first() -> None:
    idle = _WindowHook(kept=2)
    readers = Readers(_connect, idle)
    a, b, c = readers.borrow(), readers.borrow(), readers.borrow()
    borrowed: list[sqlite3.Connection] = []
    idle.between = lambda: borrowed.append(readers.borrow())
    readers.give_back(a, sound=True)  # thread 2 borrowed a in the window: a stale entry, oldest
    idle.join()
    readers.give_back(b, sound=True)
    readers.give_back(borrowed[0], sound=True)  # thread 2 is done with a: a is now the most recently used
    readers.give_back(c, sound=True)  # three idle, two kept: b, the least recently used, should close
    still_idle = set(readers._idle)
    assert a in still_idle, "a, given back after b, was closed first (its LRU place stayed the stale one)"
    assert b not in still_idle
