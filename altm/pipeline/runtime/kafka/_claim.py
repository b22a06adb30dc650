"""A worker's claim on its data dir: an advisory lock on ``DATA_DIR/workers.lock``, held while it runs.

Workers on one host may share a data dir (one shard file per partition, each written by its owner). A worker
with standby copies (``ALTM_WORKER_STANDBY``) writes the shards of every partition and hands over the deferred
work it finds of those it does not own, so it needs the data dir alone: it takes the lock exclusively, every
other worker shares it, and whichever comes second is refused with the reason. The lock is the kernel's
(``flock``): a worker that dies releases it, and nothing is left to clean up.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from altm.store import DataDirError

LOCK_FILE = "workers.lock"


class DataDirTaken(DataDirError):
    """Another worker runs on this data dir, and one of the two needs it alone."""


class DataDirClaim:
    def __init__(self, data_dir: Path, *, alone: bool) -> None:
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
            if self.alone:
                raise DataDirTaken(
                    f"another worker runs on the data dir {self.path.parent}: ALTM_WORKER_STANDBY keeps copies of "
                    "every partition there and needs a data dir of its own (give each worker its own "
                    "ALTM_DATA_DIR)") from None
            raise DataDirTaken(
                f"a worker with ALTM_WORKER_STANDBY runs on the data dir {self.path.parent} and needs it alone: "
                "give this worker a data dir of its own") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
