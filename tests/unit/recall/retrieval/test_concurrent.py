from __future__ import annotations

import threading

import pytest

from altm.recall.retrieval._concurrent import Concurrent


def test_runs_on_another_thread_and_returns_its_value() -> None:
    caller = threading.get_ident()
    job = Concurrent(lambda: threading.get_ident())
    assert job.result() != caller
    assert job.elapsed_ms >= 0


def test_an_error_reaches_the_caller_and_no_thread_is_left_running() -> None:
    def boom() -> int:
        raise ValueError("vector index closed")

    before = threading.active_count()
    job = Concurrent(boom)
    with pytest.raises(ValueError, match="vector index closed"):
        job.result()
    assert threading.active_count() == before
