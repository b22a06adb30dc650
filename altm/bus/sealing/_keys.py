"""Data keys for sealing the log: one per owner (user, agent, session), wrapped by a master key, kept in a
key store that is *not* on the log. Destroying an owner's keys makes its records on the log unreadable
(crypto-shredding); nothing else has to be rewritten."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
import secrets
import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_DDL = """
CREATE TABLE IF NOT EXISTS data_keys (
    kid TEXT PRIMARY KEY, home TEXT NOT NULL, agent TEXT NOT NULL, session TEXT NOT NULL,
    wrapped BLOB NOT NULL, master_id TEXT NOT NULL, created_ms INTEGER NOT NULL, retired_ms INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS data_keys_owner ON data_keys (home, agent, session, created_ms);
CREATE TABLE IF NOT EXISTS destroyed_keys (kid TEXT PRIMARY KEY, destroyed_ms INTEGER NOT NULL) WITHOUT ROWID;
"""

CHECKPOINT_WAIT_MS = 100
"""How long one try of the key store's truncating checkpoint waits for a reader (see ``_checkpoint``)."""

log = logging.getLogger("altm.sealing")

MASTER_KEY_ENV = "ALTM_MASTER_KEY"
"""A base64 (url-safe) 32-byte master key; without it, the key store's ``.master`` file next to it holds one."""


GUARD = "~guard"
"""The session slot of a user's *guard key*: the key of the write guard's hashes of erased content (tombstones
hold keyed hashes, never text). It is not a data key: no record is sealed with it and no erasure destroys it (the
tombstones of an erased user must keep matching), and it is the same in every process, so tombstones a shard
restored on another worker takes over from the log match as they did where they were made."""


def guard_kid(home: str) -> str:
    """The id of user ``home``'s guard key: one per user, the same in every process (made once)."""
    return "guard-" + hashlib.sha256(home.encode()).hexdigest()[:32]


class KeyStoreError(RuntimeError):
    """The key store cannot be opened or its keys cannot be unwrapped (e.g. a different master key)."""


@dataclass(frozen=True, order=True)
class Owner:
    """Whose content a record carries: a user (``home``), optionally one agent, optionally one session."""

    home: str
    agent: str = ""
    session: str = ""


class KeyStore(ABC):
    """Data keys by id (``kid``) and the current key of each owner."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the keys are kept (for people: a file's path, a topic's name)."""

    @abstractmethod
    def current(self, owner: Owner) -> tuple[str, bytes]:
        """(kid, key) to seal new records of ``owner`` with; made on first use."""

    @abstractmethod
    def get(self, kid: str) -> bytes | None:
        """The key ``kid``, or None once it has been destroyed (its records are shredded)."""

    @abstractmethod
    def retired(self, kid: str) -> bool:
        """The key ``kid`` was retired by an erasure (it still opens records until it is destroyed)."""

    @abstractmethod
    def destroyed(self, kid: str) -> bool:
        """The key ``kid`` was destroyed (False for one this store never had: it says nothing of those)."""

    @abstractmethod
    def shred(self, home: str, agent: str | None = None, session: str | None = None, *,
              made_before_ms: int | None = None) -> int:
        """Destroy the keys of a user, or of one agent, or of one session of an agent (only those made before
        ``made_before_ms``, when given: an erasure applied again later leaves the keys made since alone);
        returns how many."""

    @abstractmethod
    def retire(self, home: str, session: str, *, made_before_ms: int | None = None) -> int:
        """Stop sealing with the keys of ``session`` of every agent of a user (new records get a fresh key;
        only those made before ``made_before_ms``, when given); the retired keys still open their records until
        :meth:`destroy_retired`."""

    @abstractmethod
    def destroy_retired(self, older_than_s: float) -> int:
        """Destroy keys retired at least ``older_than_s`` seconds ago; returns how many."""

    @abstractmethod
    def guard_key(self, home: str, adopt: bytes | None = None) -> bytes:
        """User ``home``'s guard key (see :data:`GUARD`), made on first use, or set to ``adopt`` then: a key a
        shard made before the key store kept them (the first one any process stores wins; compare)."""

    def adopt_guard_keys(self, keys: Sequence[tuple[str, bytes]]) -> dict[str, bytes]:
        """:meth:`guard_key` with ``adopt`` for each (home, key) of ``keys``: the key store's key of each home
        (the first one stored wins). A store that can write them together does (one round trip)."""
        return {home: self.guard_key(home, adopt=key) for home, key in keys}

    @abstractmethod
    def find_guard_key(self, home: str) -> bytes | None:
        """User ``home``'s guard key when some process made it, else None (never makes one): what judges a
        burial from the log, which must not leave a key behind for a user nothing was buried of."""

    @abstractmethod
    def rewrap(self, new_master: bytes) -> int:
        """Wrap every data key with ``new_master`` (master key rotation; the log is not touched)."""

    @abstractmethod
    def counts(self) -> tuple[int, int]:
        """(data keys in use, data keys retired and waiting to be destroyed)."""

    @abstractmethod
    def guard_count(self) -> int:
        """How many users' guard keys it holds (wrapped by the master key too, rewrapped on rotation)."""

    @abstractmethod
    def close(self) -> None: ...


def wrap_key(master: AESGCM, kid: str, key: bytes) -> bytes:
    """A data key as a key store keeps it: a fresh nonce, then the key sealed by the master key with its kid as
    associated data (a wrapped key moved to another kid does not unwrap)."""
    nonce = secrets.token_bytes(12)
    return nonce + master.encrypt(nonce, key, kid.encode())


def unwrap_key(master: AESGCM, kid: str, wrapped: bytes) -> bytes:
    """The data key :func:`wrap_key` wrapped; raises ``InvalidTag`` when it does not unwrap."""
    return master.decrypt(wrapped[:12], wrapped[12:], kid.encode())


def master_id(master: bytes) -> str:
    return hashlib.sha256(b"altm-master-key:" + master).hexdigest()[:16]


def load_master_key(path: Path, *, create: bool) -> bytes:
    """The master key: ``ALTM_MASTER_KEY`` when set, else the key file (made, mode 0600, when ``create``)."""
    text = os.environ.get(MASTER_KEY_ENV)
    if text:
        return decode_master_key(text, MASTER_KEY_ENV)
    if path.exists():
        return decode_master_key(path.read_text(encoding="ascii").strip(), str(path))
    if not create:
        raise KeyStoreError(f"no master key: set {MASTER_KEY_ENV} or restore {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    made = path.with_name(f"{path.name}.{uuid.uuid4().hex}.new")  # whole before it has the key's name
    try:
        write_owner_only(made, (base64.urlsafe_b64encode(key).decode() + "\n").encode("ascii"))
        try:
            os.link(made, path)  # never replaces: of two processes making one, the first's key is everyone's
        except FileExistsError:
            return decode_master_key(path.read_text(encoding="ascii").strip(), str(path))
    finally:
        made.unlink(missing_ok=True)
    with path.open(encoding="ascii") as f:  # the same file, synced under the name it is read by
        os.fsync(f.fileno())
    durable_dir(path.parent)  # on disk before any data key is wrapped with it: a power loss kept the keys only
    return key


def write_owner_only(path: Path, data: bytes) -> None:
    """``data`` in a new file ``path`` that only its owner can read (mode 0600 from the start, never another
    process's umask), on disk before this returns. Refuses a file that exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def durable_dir(directory: Path) -> None:
    """A file created or renamed in ``directory`` stays after a power loss."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def decode_master_key(text: str, where: str) -> bytes:
    """A master key from its base64 text (``where`` names its source in errors)."""
    try:
        key = base64.urlsafe_b64decode(text.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raise KeyStoreError(f"the master key in {where} is not base64") from None
    if len(key) != 32:
        raise KeyStoreError(f"the master key in {where} must be 32 bytes (base64 of 32 random bytes)")
    return key


SETUP_WAIT_S = 10.0


def _set_up(db: sqlite3.Connection) -> None:
    """WAL, secure delete and the tables. While another process sets up a fresh file (a worker started beside
    this one), SQLite refuses the switch to WAL at once, whatever the busy timeout (it does not wait on a lock it
    could deadlock on): tried again for up to ``SETUP_WAIT_S`` (each step is idempotent)."""
    deadline = time.monotonic() + SETUP_WAIT_S
    pause = 0.01
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA secure_delete=ON")
            db.executescript(_DDL)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(0.2, pause * 2)


class SqliteKeyStore(KeyStore):
    """Data keys in a SQLite file, each wrapped (AES-GCM) by the master key with its kid as associated data.

    Destroyed keys are overwritten on disk (``secure_delete``) and leave no copy in the write-ahead log.
    Safe for several processes on one host (WAL, busy timeout)."""

    def __init__(self, path: str | Path, *, master_key: bytes | None = None, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._master = master_key if master_key is not None else load_master_key(
            self.master_path, create=not read_only)
        self._master_id = master_id(self._master)
        self._aead = AESGCM(self._master)
        self._lock = threading.Lock()
        # a destroyed key's pages may still be in the file and the write-ahead log: owed at every writable open
        # too (a process killed between a destruction's commit and its checkpoint recorded its debt nowhere)
        self._checkpoint_owed = not read_only
        self._db = self._connect()
        if self._checkpoint_owed:
            self._checkpoint_at_open()

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def master_path(self) -> Path:
        return self.path.with_name(self.path.name + ".master")

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            if not self.path.exists():
                raise KeyStoreError(f"no key store at {self.path}")
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None,
                                 check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout=10000")  # before anything that locks: workers start side by side
            _set_up(db)
            self._owner_only()
        db.execute("PRAGMA busy_timeout=10000")
        return db

    def _owner_only(self) -> None:
        """The store and its write-ahead files readable by their owner only (made under the process umask, they
        were 0644: any local account could copy the wrapped keys)."""
        for name in (self.path, self.path.with_name(self.path.name + "-wal"),
                     self.path.with_name(self.path.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                name.chmod(0o600)

    def current(self, owner: Owner) -> tuple[str, bytes]:
        """Read from the file every time (no cache): a key another process destroyed a moment ago is never
        used to seal, and a destroyed key never opens anything again in any process."""
        with self._lock:
            row = self._db.execute(
                "SELECT kid, wrapped, master_id FROM data_keys WHERE home=? AND agent=? AND session=? "
                "AND retired_ms IS NULL ORDER BY created_ms DESC, kid LIMIT 1",
                (owner.home, owner.agent, owner.session)).fetchone()
            if row is not None:
                return str(row[0]), self._unwrap(str(row[0]), bytes(row[1]), str(row[2]))
            return self._create(owner)

    def _create(self, owner: Owner) -> tuple[str, bytes]:
        if self.read_only:
            raise KeyStoreError(f"the key store {self.path} is open read-only: it cannot make a key")
        kid, key = uuid.uuid4().hex, AESGCM.generate_key(bit_length=256)
        self._db.execute(
            "INSERT INTO data_keys (kid, home, agent, session, wrapped, master_id, created_ms) VALUES (?,?,?,?,?,?,?)",
            (kid, owner.home, owner.agent, owner.session, self._wrap(kid, key), self._master_id,
             time.time_ns() // 1_000_000))
        return kid, key

    def get(self, kid: str) -> bytes | None:
        """The key; None when it was destroyed; :class:`KeyStoreError` when this store never had it (the record
        was sealed with another key store: opening it as shredded would drop it silently)."""
        with self._lock:
            row = self._db.execute("SELECT wrapped, master_id FROM data_keys WHERE kid=?", (kid,)).fetchone()
            if row is not None:
                return self._unwrap(kid, bytes(row[0]), str(row[1]))
            if self._db.execute("SELECT 1 FROM destroyed_keys WHERE kid=?", (kid,)).fetchone() is not None:
                return None
        raise KeyStoreError(
            f"data key {kid} is not in the key store {self.path}: the record was sealed with another key store "
            "(set ALTM_KEYSTORE, or ALTM_DATA_DIR, to the deployment's own)")

    def holds(self, kid: str) -> bool:
        """This store has the data key ``kid``, or had it and destroyed it (nothing is unwrapped: a store wrapped
        by another master key still holds its keys)."""
        with self._lock:
            return (self._db.execute("SELECT 1 FROM data_keys WHERE kid=?", (kid,)).fetchone() is not None
                    or self._db.execute("SELECT 1 FROM destroyed_keys WHERE kid=?", (kid,)).fetchone() is not None)

    def check_master(self) -> None:
        """Raise :class:`KeyStoreError` when this store's data keys are wrapped by master keys other than the one
        given (an interrupted rotation, an old ``ALTM_MASTER_KEY``): it says which, and where the new one is."""
        wrapping = self.master_ids()
        if wrapping and self._master_id not in wrapping:
            raise KeyStoreError(
                f"the data keys in {self.path} are wrapped by master key {', '.join(sorted(wrapping))}, not by the "
                f"one given ({self._master_id}): set {MASTER_KEY_ENV} (or restore {self.master_path}) to the key "
                f"store's own (a rotation interrupted after rewrapping left the new one in {self.master_path}.new)")

    def retired(self, kid: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT retired_ms FROM data_keys WHERE kid=?", (kid,)).fetchone()
        return row is not None and row[0] is not None

    def destroyed(self, kid: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM destroyed_keys WHERE kid=?", (kid,)).fetchone() is not None

    def shred(self, home: str, agent: str | None = None, session: str | None = None, *,
              made_before_ms: int | None = None) -> int:
        if self.read_only:
            raise KeyStoreError(f"the key store {self.path} is open read-only: it cannot destroy keys")
        where, args = "home=? AND session != ?", list[object]([home, GUARD])  # guard keys stay
        if agent is not None:
            where, args = where + " AND agent=?", [*args, agent]
        if session is not None:
            where, args = where + " AND session=?", [*args, session]
        if made_before_ms is not None:
            where, args = where + " AND created_ms < ?", [*args, made_before_ms]
        return self._destroy(where, args)

    def retire(self, home: str, session: str, *, made_before_ms: int | None = None) -> int:
        if self.read_only:
            raise KeyStoreError(f"the key store {self.path} is open read-only: it cannot retire keys")
        before = made_before_ms if made_before_ms is not None else 2**62
        with self._lock:
            cur = self._db.execute("UPDATE data_keys SET retired_ms=? WHERE home=? AND session=? AND retired_ms IS "
                                   "NULL AND created_ms < ?", (time.time_ns() // 1_000_000, home, session, before))
            return cur.rowcount

    def destroy_retired(self, older_than_s: float) -> int:
        if self.read_only:
            return 0
        cutoff = time.time_ns() // 1_000_000 - int(older_than_s * 1000)
        return self._destroy("retired_ms IS NOT NULL AND retired_ms <= ?", [cutoff])

    def guard_key(self, home: str, adopt: bytes | None = None) -> bytes:
        kid = guard_kid(home)
        with self._lock:
            stored = self._stored_guard_key(kid)
            if stored is None:
                if self.read_only:
                    raise KeyStoreError(f"the key store {self.path} is open read-only: it has no guard key for "
                                        f"{home} and cannot make one")
                key = adopt if adopt is not None else AESGCM.generate_key(bit_length=256)
                self._db.execute(  # another process may have made it meanwhile: its key wins
                    "INSERT OR IGNORE INTO data_keys (kid, home, agent, session, wrapped, master_id, created_ms) "
                    "VALUES (?,?,?,?,?,?,?)", (kid, home, "", GUARD, self._wrap(kid, key), self._master_id,
                                                time.time_ns() // 1_000_000))
                stored = self._stored_guard_key(kid)
                assert stored is not None
            return stored

    def find_guard_key(self, home: str) -> bytes | None:
        with self._lock:
            return self._stored_guard_key(guard_kid(home))

    def _stored_guard_key(self, kid: str) -> bytes | None:
        """The guard key of ``kid`` (unwrapped), None when there is none; the caller holds the lock."""
        row = self._db.execute("SELECT wrapped, master_id FROM data_keys WHERE kid=?", (kid,)).fetchone()
        return None if row is None else self._unwrap(kid, bytes(row[0]), str(row[1]))

    def _destroy(self, where: str, args: Sequence[object]) -> int:
        """Delete the keys (their pages overwritten), remember their ids, and move the write-ahead log into
        the file and truncate it, so no copy of a destroyed key stays on disk."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                doomed = [str(r[0]) for r in self._db.execute(f"SELECT kid FROM data_keys WHERE {where}", args)]  # noqa: S608
                self._db.execute(f"DELETE FROM data_keys WHERE {where}", args)  # noqa: S608
                now = time.time_ns() // 1_000_000
                self._db.executemany("INSERT OR IGNORE INTO destroyed_keys (kid, destroyed_ms) VALUES (?,?)",
                                     [(kid, now) for kid in doomed])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            if doomed or self._checkpoint_owed:
                self._checkpoint()
            return len(doomed)

    def _checkpoint_at_open(self) -> None:
        """The checkpoint a writable open owes (see ``_checkpoint_owed``), tried once without waiting: a reader in
        another process (a worker beside this one) leaves it owed, paid at the next destruction or sweep."""
        self._db.execute("PRAGMA busy_timeout=0")
        try:
            busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError:
            busy = 1
        finally:
            self._db.execute("PRAGMA busy_timeout=10000")
        self._checkpoint_owed = bool(busy)

    def _checkpoint(self, attempts: int = 20) -> None:
        """``wal_checkpoint(TRUNCATE)`` until it completes, each try waiting at most ``CHECKPOINT_WAIT_MS`` for a
        reader in another process (a backup holding a read open stalled an erasure for 50 × the busy timeout);
        one that cannot complete now is owed, and tried again at the next destruction or sweep."""
        self._db.execute(f"PRAGMA busy_timeout={CHECKPOINT_WAIT_MS}")
        try:
            for _ in range(attempts):
                busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                if not busy:
                    self._checkpoint_owed = False
                    return
                time.sleep(0.05)
        finally:
            self._db.execute("PRAGMA busy_timeout=10000")
        self._checkpoint_owed = True
        log.warning("the key store %s could not move its write-ahead log into the file (a reader holds it): a "
                    "destroyed key's old page stays in it until the next sweep completes the checkpoint", self.path)

    def rewrap(self, new_master: bytes) -> int:
        """Wrap every data key with ``new_master`` (master key rotation; the log is not touched). Returns how
        many keys were rewrapped; the caller then replaces the master key (env or file)."""
        if self.read_only:
            raise KeyStoreError(f"the key store {self.path} is open read-only")
        new_aead, new_id = AESGCM(new_master), master_id(new_master)
        count = 0
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                rows = self._db.execute("SELECT kid, wrapped, master_id FROM data_keys").fetchall()
                for kid, wrapped, mid in rows:
                    key = self._unwrap(str(kid), bytes(wrapped), str(mid))
                    self._db.execute("UPDATE data_keys SET wrapped=?, master_id=? WHERE kid=?",
                                     (wrap_key(new_aead, str(kid), key), new_id, kid))
                    count += 1
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._master, self._master_id, self._aead = new_master, new_id, new_aead
        return count

    def master_ids(self) -> set[str]:
        """Ids of the master keys that wrap this store's data keys (one, unless a rotation is under way)."""
        return {str(r[0]) for r in self._db.execute("SELECT DISTINCT master_id FROM data_keys")}

    def counts(self) -> tuple[int, int]:
        active, retired = self._db.execute(  # data keys: guard keys seal nothing
            "SELECT COUNT(*) - COUNT(retired_ms), COUNT(retired_ms) FROM data_keys WHERE session != ?",
            (GUARD,)).fetchone()
        return int(active), int(retired)

    def guard_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM data_keys WHERE session = ?", (GUARD,)).fetchone()[0])

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def _wrap(self, kid: str, key: bytes) -> bytes:
        return wrap_key(self._aead, kid, key)

    def _unwrap(self, kid: str, wrapped: bytes, wrapped_by: str) -> bytes:
        if wrapped_by != self._master_id:
            raise KeyStoreError(
                f"data key {kid} in {self.path} is wrapped by master key {wrapped_by}, not by the one given "
                f"({self._master_id}): set {MASTER_KEY_ENV} (or restore {self.master_path}) to the key store's own "
                f"(a rotation interrupted after rewrapping left the new one in {self.master_path}.new)")
        try:
            return unwrap_key(self._aead, kid, wrapped)
        except InvalidTag:
            raise KeyStoreError(f"data key {kid} in {self.path} does not unwrap: the key store is damaged") from None
