"""The probe that asks whether a pipeline runs (``writer_running``) itself makes a pipeline that starts at that moment
fail: ``altm serve`` (or ``altm ingest``) started while ``altm stats``, ``altm state-hash`` or another command's
start-up check looks at the data dir dies with "the embedded log ... is open for writing by another process", when
no process writes it.

Finding: ``writer_running`` (altm/bus/embedded/_log.py:366-377, added by 39447b2) probes the log's lock file by
*taking* ``flock(LOCK_SH | LOCK_NB)`` on it and then releasing it. While it holds that shared lock, a writer's
``EmbeddedLog.start`` (altm/bus/embedded/_log.py:76-82) asks ``flock(LOCK_EX | LOCK_NB)``, which a shared lock
blocks, and refuses at once (``busy_log``) without trying again. The probe now runs on every ``altm stats``
(``vector_freshness``, altm/wiring/__init__.py:46), every ``altm state-hash`` (:65) and every pipeline's start-up
(``_refuse_to_open``, altm/wiring/_deployment.py:182-184), so a monitoring loop that polls ``altm stats`` races each
restart of the service: a supervisor restarting ``altm serve`` sees it exit with a false "another process" error.
The probe is a read: it must never be what keeps the one writer out.

Reproduction: the log exists, nothing holds it. ``writer_running`` is called; at the instant its probe holds the
shared lock (this is what another process's ``altm stats`` does), a pipeline's log starts in the same instant
(``EmbeddedLog(path).start()``, what ``altm serve`` does): it raises ``BusError`` "open for writing by another
process", and the probe answers False (no writer).

Expected: a probe never makes a writer's start fail: with no writer running, ``EmbeddedLog.start`` succeeds even
when a ``writer_running`` probe is under way (e.g. the writer retries its non-blocking ``LOCK_EX`` for a short
while before it says the log is busy, since probes hold the lock only for an instant, or the probe asks without
taking a lock that conflicts with the writer's).
"""

from __future__ import annotations

import asyncio
import fcntl
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import altm.bus.embedded._log as log_module
from altm.bus import BusError
from altm.bus.embedded import EmbeddedLog, writer_running


async def _start_and_stop(path: Path) -> None:
    log = EmbeddedLog(path)
    await log.start()
    await log.stop()


def test_a_probe_does_not_refuse_a_writer_that_starts_meanwhile(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.db"
    asyncio.run(_start_and_stop(path))  # a data dir whose pipeline stopped: its lock file is there, unheld
    assert writer_running(path) is False
    outcome: list[str] = []
    writers: list[threading.Thread] = []

    def start() -> None:  # another process's pipeline, starting while the probe holds its lock
        try:
            asyncio.run(_start_and_stop(path))
            outcome.append("started")
        except BusError as exc:
            outcome.append(f"refused: {exc}")

    class Probing:
        """``fcntl`` as the log module sees it: while the probe holds its shared lock, a writer starts (in a
        thread of its own, as another process would: the probe goes on and releases its lock meanwhile)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(fcntl, name)

        def flock(self, fd: int, operation: int) -> None:
            fcntl.flock(fd, operation)
            if operation & fcntl.LOCK_SH and not writers:
                writers.append(threading.Thread(target=start))
                writers[0].start()
                time.sleep(0.05)  # the writer asks for the lock while the probe holds it

    monkeypatch.setattr(log_module, "fcntl", Probing())
    running = writer_running(path)
    for writer in writers:
        writer.join(10)
    monkeypatch.undo()
    assert running is False  # the probe itself says no writer runs
    assert outcome == ["started"], (
        f"a pipeline starting while a probe looked at the log, with no writer anywhere: {outcome}")
