"""A process's claim on the data dir it writes: an advisory lock on ``DATA_DIR/workers.lock``, held while it runs.

Workers on one host may share a data dir (one shard file per partition, each written by its owner). Some
processes write shards of partitions they do not own, or delete them, and need the data dir alone: a worker with
standby copies, a worker that drops unowned shards, a read replica. Those take the lock exclusively, every other
worker shares it, and whichever comes second is refused with the reason. The lock is the kernel's (``flock``): a
process that dies releases it, and nothing is left to clean up. On a filesystem without ``flock`` (some NFS
mounts) a claim to share is given with a warning (nothing could be checked before either); one to be alone is
refused, since it cannot be checked.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from altm.store import DataDirError

LOCK_FILE = "workers.lock"

log = logging.getLogger("altm.worker")


class DataDirTaken(DataDirError):
    """Another process runs on this data dir, and one of the two needs it alone."""


class DataDirClaim:
    """``alone``: why this process needs the data dir to itself (e.g. "ALTM_WORKER_STANDBY keeps copies of every
    partition there"), or None when it may share it with other workers."""

    def __init__(self, data_dir: Path, *, alone: str | None) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self.alone = alone
        self._fd: int | None = None

    def take(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if self.alone else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirTaken(self._taken()) from None
        except OSError as exc:
            os.close(fd)
            if self.alone:
                raise DataDirTaken(f"cannot lock {self.path} ({exc.strerror}): {self.alone} and needs a data dir "
                                   "of its own, which this filesystem cannot check") from None
            log.warning("cannot lock %s (%s): whether another process needs this data dir alone is not checked",
                        self.path, exc.strerror)
            return
        self._fd = fd

    def _taken(self) -> str:
        where = self.path.parent
        if self.alone:
            return (f"another process runs on the data dir {where}: {self.alone} and needs a data dir of its own "
                    "(give each process its own ALTM_DATA_DIR)")
        return (f"a process that needs the data dir {where} alone runs on it (a worker with standby copies or "
                "dropping unowned shards, or a read replica): give this worker a data dir of its own")

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
