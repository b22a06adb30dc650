"""A worker stops within ALTM_WORKER_STOP_TIMEOUT_S of SIGTERM even when faust's own shutdown hangs on a broker
that is down (issue 13: workers ignored SIGTERM while the broker was down; measured by hand: faust's consumer
thread waited 60 s, the process was still up after that; with the watchdog it exits 20 s after the signal)."""

from __future__ import annotations

import threading

import pytest

from altm.wiring import _worker


class _HangingWorker:
    """Stands in for faust's Worker: its stop handler returns, but the process would never end."""

    def __init__(self) -> None:
        self.signalled: list[str] = []

    def _on_sigterm(self) -> None:
        self.signalled.append("TERM")

    def _on_sigint(self) -> None:
        self.signalled.append("INT")


def test_a_stop_signal_arms_a_watchdog_that_ends_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    exited = threading.Event()
    codes: list[int] = []

    def fake_exit(code: int) -> None:
        codes.append(code)
        exited.set()

    monkeypatch.setattr("altm.wiring._worker.os._exit", fake_exit)
    worker = _worker._worker_class(_HangingWorker)()
    worker.stop_timeout_s = 0.2
    worker._on_sigterm()
    worker._on_sigterm()  # a second signal does not start a second timer
    assert worker.signalled == ["TERM", "TERM"]  # faust's own handler still runs
    assert exited.wait(5) and codes == [1]


def test_the_stop_timeout_is_a_setting() -> None:
    from altm.core import Settings

    assert Settings().worker_stop_timeout_s == 20.0
    assert Settings(worker_stop_timeout_s=5).worker_stop_timeout_s == 5.0


def test_the_worker_leaves_library_debug_logging_off() -> None:
    """faust's startup spinner set the root logger to DEBUG for good, so aiokafka built (and dropped) a log record
    for every record a worker sent: 60k records for 2,000 turns, 2 % of its time in a profile."""
    import logging

    import faust

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        app = faust.App("altm-test-logging", broker="kafka://127.0.0.1:1", web_enabled=False)
        worker = _worker._worker_class(faust.Worker)(app, loglevel="WARNING", quiet=True)
        worker._setup_logging()
        assert not logging.getLogger("aiokafka.producer.producer").isEnabledFor(logging.DEBUG)
        assert logging.getLogger("altm.worker").isEnabledFor(logging.WARNING)
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers
