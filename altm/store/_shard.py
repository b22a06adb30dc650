"""One SQLite shard per partition: memories, graph, FTS, audit, tombstones, offsets and the outbox.

Reads are open to everyone. Memory state changes only through the :class:`ShardTx` that
:meth:`Shard.transaction` yields (the writer's), whose every mutation writes its audit row first.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from altm.core import Scope
from altm.store._errors import ShardError
from altm.store._migrations import LATEST_VERSION, migrate
from altm.store._reading import IdleReaders, ReaderConnection, Readers
from altm.store._redaction import redact_json, redact_reason_json
from altm.store._rows import MEMORY_COLUMNS
from altm.store._text_index import apply_pending, register_index_form
from altm.store._tx import ShardTx
from altm.store._tx._erasure import PURGE_OWED_KEY

log = logging.getLogger("altm.store")
OutboxRow = tuple[int, str, str | None, bytes, bytes | None]
"""An outbox row not published yet: (seq, topic, key, value, packed headers)."""
BUSY_TIMEOUT_MS = 5000
LOG_TRUNCATE_WAIT_MS = 50
"""How long a purge waits for a reader (another process: the retrieval service, a backup) before it leaves the
write-ahead log's truncation owed (see :meth:`Shard.purge`): the writer does not stall behind a long read."""


class Shard:
    """One partition's SQLite file. Its connection belongs to its *owner* thread (the one that made the shard, or
    ``owner``: the deployment's event loop), which alone writes. Any other thread reads through read-only
    connections (recall off the event loop: :mod:`altm.store._reading`); :meth:`close` closes them all."""

    def __init__(self, path: str | Path, partition: int, *, read_only: bool = False, owner: int | None = None,
                 idle: IdleReaders | None = None) -> None:
        self.path = Path(path)
        self.partition = partition
        self.read_only = read_only
        self._owner = owner if owner is not None else threading.get_ident()
        self._conn: sqlite3.Connection | None = None
        self._idle = idle if idle is not None else IdleReaders()  # shared by the shards of a set
        self._readers = Readers(self._connect_reader, self._idle)
        self._in_tx = False
        self._truncation_owed = False
        self._purge_due = False  # owed when a reader thread opened the shard: the owner purges it
        self._erased_in_log = False  # a purge's truncation of the write-ahead log was held off by a reader

    def open(self) -> Shard:
        """Open (and, writable, migrate) the shard file; a file SQLite cannot read (damaged, truncated, a
        directory in its place) is a :class:`ShardError` naming it, not a bare SQLite error."""
        if self._conn is not None:
            return self
        try:
            return self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise  # another process holds it: the caller's to wait for or report
            raise ShardError(f"shard {self.path} cannot be opened: {exc} (restore it from a backup, or move it "
                             "aside and replay the log into a fresh data dir)") from exc

    def _open(self) -> Shard:
        if self.read_only:
            if not self.path.exists():
                raise ShardError(f"no shard at {self.path}")
            conn = self._connect_read_only()
            try:
                version = conn.execute(
                    "SELECT MAX(version) FROM schema_version").fetchone()[0] if conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone() else 0
            except BaseException:
                conn.close()
                raise
            if version != LATEST_VERSION:
                conn.close()
                if version > LATEST_VERSION:
                    raise ShardError(f"shard {self.path} has schema version {version}, newer than this ALTM reads "
                                     f"({LATEST_VERSION}): upgrade ALTM")
                raise ShardError(
                    f"shard {self.path} has schema version {version}, this ALTM reads {LATEST_VERSION}: open the "
                    "data dir once for writing (e.g. `altm sweep --data-dir DIR`) to migrate it")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # the owner thread alone uses it; whichever thread opened it (a reader's first use of a shard opens it)
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed: erased content leaves the file
                migrate(conn)
            except BaseException:
                conn.close()
                raise
        try:
            _prepare(conn)
            # a purge whose truncation a reader held off may have been owed when the shard was last closed (or the
            # process died): the first transaction tries it, without waiting
            self._truncation_owed = not self.read_only
            self._purge_due = not self.read_only and _purge_owed(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._readers = Readers(self._connect_reader, self._idle)  # a shard closed and opened again reads anew
        if self._purge_due and self.owned_here:
            log.info("shard %s: purging after an erasure whose process stopped before it purged", self.path)
            self.purge()
        return self

    @property
    def owned_here(self) -> bool:
        """Whether the calling thread is the shard's owner (the one that writes it)."""
        return threading.get_ident() == self._owner

    def settle(self) -> None:
        """On the owner thread: a purge a reader's open left owed, and a truncation of the write-ahead log a
        reader held off, tried again now, without waiting (the read pool calls it when a read ends: a recall
        that overlapped an erasure's purge kept the erased rows' page images in the log until the next write)."""
        if self.read_only or self._conn is None or self._in_tx or not self.owned_here:
            return
        if self._purge_due:
            self.purge()
        elif self._erased_in_log:
            self._truncate_log(wait_ms=0)

    def _connect_read_only(self, factory: type[sqlite3.Connection] = sqlite3.Connection) -> sqlite3.Connection:
        # check_same_thread off: used by one thread at a time, closed by whichever closes the shard
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False,
                               factory=factory)

    def _connect_reader(self) -> sqlite3.Connection:
        conn = self._connect_read_only(factory=ReaderConnection)
        try:
            _prepare(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        self._readers.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def _db(self) -> sqlite3.Connection:
        """The SQLite connection, for the store's own modules: nothing outside ``altm.store`` reaches it (a
        test checks), and mutations go through :meth:`transaction`. On a thread other than the owner, that
        thread's read-only connection (inside :func:`altm.store.read_snapshot`, in one read transaction)."""
        if self._conn is None:
            raise ShardError(f"shard {self.path} is not open")
        if self.owned_here:
            return self._conn
        return self._readers.connection()

    @contextmanager
    def transaction(self) -> Iterator[ShardTx]:
        """One ``BEGIN IMMEDIATE`` transaction: the :class:`ShardTx` it yields is the only way to mutate."""
        if self.read_only:
            raise ShardError("shard opened read-only")
        if not self.owned_here:
            raise ShardError(f"shard {self.path} is written by the thread that owns it (the deployment's event loop), "
                             "not from another thread")
        if self._in_tx:
            raise ShardError("nested shard transaction")
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        tx = ShardTx(conn)
        try:
            yield tx
            apply_pending(conn)  # the word and trigram indexes, once for the transaction
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled it back itself (an interrupt, a full disk)
                conn.execute("ROLLBACK")
            raise
        finally:
            tx.end()
            self._in_tx = False
        if self._purge_due:  # a reader thread opened the shard and left its purge to the owner
            self.purge()
        elif self._truncation_owed:  # a reader held off the last purge's truncation: try again, without waiting
            self._truncate_log(wait_ms=0)

    # -- reads -----------------------------------------------------------------------------------------
    def memory_row(self, memory_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM memories WHERE memory_id=?", (memory_id,)).fetchone()
        return None if row is None else {k: row[k] for k in MEMORY_COLUMNS}

    def next_offset(self, group_id: str, topic: str, partition: int) -> int | None:
        row = self._db.execute(
            "SELECT next_offset FROM consumer_offsets WHERE group_id=? AND topic=? AND partition=?",
            (group_id, topic, partition),
        ).fetchone()
        return None if row is None else int(row[0])

    def has_legacy_tombstones(self) -> bool:
        """Tombstones written before version 6 (text, not yet hashed): the writer hashes them when it starts."""
        return self._db.execute("SELECT 1 FROM tombstones WHERE shingle_hashes IS NULL LIMIT 1").fetchone() is not None

    def guard_keys(self) -> list[tuple[str, bytes]]:
        """(scope home, key) of every user whose guard key this shard holds."""
        return [(str(r[0]), bytes(r[1])) for r in self._db.execute("SELECT home, key FROM guard_keys ORDER BY home")]

    def bound_log(self) -> str | None:
        """The identity of the log whose offsets this shard stores (None until a writer binds it)."""
        row = self._db.execute("SELECT value FROM shard_meta WHERE key = 'log'").fetchone()
        return None if row is None else str(row[0])

    def bind_log(self, identity: str) -> None:
        """Record the log this shard's offsets belong to (once; a different one is refused by the caller)."""
        if self.read_only:
            raise ShardError("shard opened read-only")
        self._db.execute("INSERT OR IGNORE INTO shard_meta (key, value) VALUES ('log', ?)", (identity,))

    def mark_short_copy(self) -> None:
        """This shard, a standby copy, skipped proposals it could not open (see ``WriterDriver.copy_is_short``);
        kept in the shard, so a worker started again still knows."""
        if self.read_only:
            raise ShardError("shard opened read-only")
        self._db.execute("INSERT OR IGNORE INTO shard_meta (key, value) VALUES ('short_copy', '1')")

    def short_copy(self) -> bool:
        return self._db.execute("SELECT 1 FROM shard_meta WHERE key = 'short_copy'").fetchone() is not None

    def has_offsets(self) -> bool:
        return self._db.execute("SELECT 1 FROM consumer_offsets LIMIT 1").fetchone() is not None

    def pending_outbox(self, limit: int = 1000) -> list[OutboxRow]:
        """(seq, topic, key, value, packed headers) of rows committed and not yet published, in commit order."""
        return self._unpublished("ORDER BY seq LIMIT ?", (limit,))

    def _unpublished(self, tail: str, args: tuple[Any, ...] = ()) -> list[OutboxRow]:
        rows = self._db.execute(
            f"SELECT seq, topic, key, value, headers FROM outbox WHERE published=0 {tail}", args).fetchall()
        return [(int(r[0]), str(r[1]), r[2], bytes(r[3]), bytes(r[4]) if r[4] is not None else None) for r in rows]

    def outbox_depth(self) -> int:
        """Rows committed and not yet published (published rows are deleted)."""
        return int(self._db.execute("SELECT COUNT(*) FROM outbox WHERE published=0").fetchone()[0])

    def pending_burials(self) -> list[OutboxRow]:
        """The outbox rows not published yet that carry tombstones back to the proposals log (an erasure's or a
        forget's ``bury``), as :meth:`pending_outbox` gives them."""
        return self._unpublished("AND (topic = 'proposals' OR topic LIKE '%proposals') ORDER BY seq")

    def mark_sent(self, seqs: list[int]) -> None:
        """The bus has these outbox rows (published apart from the rest): they go. Not audited."""
        self._db.executemany("DELETE FROM outbox WHERE seq=?", [(q,) for q in seqs])

    def drop_unpublished(self) -> int:
        """Forget every outbox row not published yet (another process published what they hold); returns how
        many. Outbox bookkeeping, not memory state: not audited."""
        return int(self._db.execute("DELETE FROM outbox WHERE published=0").rowcount)

    def mark_published(self, up_to_seq: int) -> None:
        """The bus has the outbox rows up to ``up_to_seq``: they go (a published after-image kept here would
        outlive an erasure of its content). Outbox bookkeeping, not memory state: not audited."""
        self._db.execute("DELETE FROM outbox WHERE seq<=?", (up_to_seq,))

    def memory_ids(self) -> list[str]:
        """Every memory id of the shard (what its vector points are named by)."""
        return [str(r[0]) for r in self._db.execute("SELECT memory_id FROM memories")]

    def memory_scopes(self) -> dict[str, Scope]:
        """Every memory id of the shard with the scope it is stored in (a vector point is put by both)."""
        return {str(r[0]): Scope(tenant_id=r[1], workspace_id=r[2], user_id=r[3], agent_id=r[4])
                for r in self._db.execute(
                    "SELECT memory_id, tenant_id, workspace_id, user_id, agent_id FROM memories")}

    def purge(self) -> None:
        """After an erasure: merge the word indexes (no segment keeps the erased terms) and fold the write-ahead
        log into the file and truncate it (no old page image keeps them either). The erasure's transaction
        recorded it as owed (``ShardTx.owe_purge``): done, it is owed no more."""
        for table in ("memories_fts", "memories_fts_tri"):
            self._db.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        self._db.execute("DELETE FROM shard_meta WHERE key = ?", (PURGE_OWED_KEY,))
        self._purge_due = False
        self._erased_in_log = True  # until a truncation completes
        if not self._truncate_log(wait_ms=LOG_TRUNCATE_WAIT_MS):
            log.warning("shard %s could not truncate its write-ahead log after an erasure (a reader holds it): the "
                        "erased rows' old page images stay in it until it is tried again once the reader is done "
                        "(when a read of this process ends, or after the writer's next transaction)", self.path)

    def _truncate_log(self, *, wait_ms: int) -> bool:
        """``wal_checkpoint(TRUNCATE)``, waiting at most ``wait_ms`` for readers; whether it completed. One that
        did not is owed, and tried again after each transaction until it does (a reader in another process held
        it off: the log kept the erased rows' page images behind every later write)."""
        self._db.execute(f"PRAGMA busy_timeout={wait_ms}")
        try:
            busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._truncation_owed = bool(busy)
        self._erased_in_log = self._erased_in_log and bool(busy)
        return not busy


def _prepare(conn: sqlite3.Connection) -> None:
    """What every connection of a shard needs: its wait for locks, the store's SQL functions and row form."""
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.create_function("redact_json", 1, redact_json, deterministic=True)
    conn.create_function("redact_reason_json", 1, redact_reason_json, deterministic=True)
    register_index_form(conn)  # the text indexes hold the content's NFKC form
    conn.row_factory = sqlite3.Row


def _purge_owed(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM shard_meta WHERE key = ?", (PURGE_OWED_KEY,)).fetchone() is not None
