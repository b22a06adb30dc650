"""Recall's reads, off the event loop.

A recall reads SQLite for milliseconds to a second (a long query over a large store): on the event loop it held
every other request and, in ``serve``, the embedded pipeline. :class:`ReadPool` runs reads on threads of its own,
each read in one snapshot of the shards it reads (:func:`altm.store.read_snapshot`); the event loop's thread keeps
the shards' writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from altm.app._errors import ShuttingDown
from altm.store import read_snapshot

_NOT_SERVED = "the deployment is shutting down: the read was not served"
P = ParamSpec("P")
T = TypeVar("T")


def _in_snapshot(fn: Callable[[], T], loop: asyncio.AbstractEventLoop, after: Callable[[], object]) -> T:
    try:
        with read_snapshot():
            return fn()
    finally:  # the snapshot has ended: what it held off, tried again on the loop (the shards' owner)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(after)


class ReadPool:
    """At most ``threads`` reads at once, each on a thread of the pool (made on first use). When a read ends,
    ``after`` runs on the event loop (the shards' owner retries what the read held off: an erasure's truncation
    of a write-ahead log). ``close()`` refuses the reads queued, waits for those running (a cancelled request's
    read runs to its end on its thread: SQLite cannot be stopped from here) and ends the threads; a read asked
    for after it is refused too (:class:`ShuttingDown`: HTTP 503)."""

    def __init__(self, threads: int, after: Callable[[], object] = lambda: None) -> None:
        self.threads = threads
        self._after = after
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on a reader thread, in the caller's context (its trace span, its metrics'
        labels) and in one read snapshot."""
        if self._closed:
            raise ShuttingDown(_NOT_SERVED)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="altm-read")
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        call = functools.partial(context.run, _in_snapshot, functools.partial(fn, *args, **kwargs), loop, self._after)
        future = loop.run_in_executor(self._executor, call)
        try:
            return await future
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if future.cancelled() and self._closed and (task is None or not task.cancelling()):
                # the pool dropped it as the deployment closed, not the caller: refused, with the reason
                raise ShuttingDown(_NOT_SERVED) from None
            raise

    def close(self) -> None:
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
