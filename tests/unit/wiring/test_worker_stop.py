"""A worker stops within ALTM_WORKER_STOP_TIMEOUT_S of SIGTERM even when its stop hangs on a broker that is
down (issue 13: workers ignored SIGTERM while the broker was down; measured by hand on the faust runtime: its
consumer thread waited 60 s, the process was still up after that; with the watchdog it exits after the
timeout). Here the runtime is a stand-in whose stop never returns."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Any

import pytest

from altm.core import Settings
from altm.wiring import _worker


class _Runtime:
    def __init__(self, *, hang: bool) -> None:
        self.settings = Settings()
        self.hang = hang
        self.calls: list[str] = []

    async def start(self) -> None:
        self.calls.append("start")

    async def stop(self) -> None:
        self.calls.append("stop")
        if self.hang:
            await asyncio.Event().wait()  # its consumer waits on a broker that is down


def _signal_soon(sig: int) -> None:
    threading.Timer(0.2, os.kill, args=(os.getpid(), sig)).start()


def test_a_stop_that_hangs_ends_the_process_after_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    codes: list[int] = []
    monkeypatch.setattr("altm.wiring._worker.os._exit", codes.append)  # in a worker: the process ends here
    monkeypatch.setattr("altm.wiring._worker.logging.shutdown", lambda: None)
    runtime: Any = _Runtime(hang=True)
    _signal_soon(signal.SIGTERM)
    with pytest.raises(TimeoutError):  # the stand-in's stop hangs for good; the watchdog fired meanwhile
        asyncio.run(asyncio.wait_for(_worker.run_until_signalled(runtime, 0.3), 3.0))
    assert runtime.calls == ["start", "stop"] and codes == [1]


def test_a_stop_signal_stops_the_runtime_cleanly() -> None:
    runtime: Any = _Runtime(hang=False)
    _signal_soon(signal.SIGINT)
    asyncio.run(asyncio.wait_for(_worker.run_until_signalled(runtime, 5.0), 5.0))
    assert runtime.calls == ["start", "stop"]


def test_the_stop_timeout_is_a_setting() -> None:
    assert Settings().worker_stop_timeout_s == 20.0
    assert Settings(worker_stop_timeout_s=5).worker_stop_timeout_s == 5.0
