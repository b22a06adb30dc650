"""One call on a helper thread, joined by the caller: no pool to own, nothing left running."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Concurrent(Generic[T]):
    """Starts ``fn`` on a daemon thread at once, in a copy of the caller's context (its trace span is the
    parent of what ``fn`` records); ``result()`` joins it and returns or re-raises."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._context = contextvars.copy_context()
        self._value: T | None = None
        self._error: BaseException | None = None
        self.elapsed_ms = 0.0
        self._thread = threading.Thread(target=self._run, name="altm-recall", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            self._value = self._context.run(self._fn)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc
        finally:
            self.elapsed_ms = (time.perf_counter() - t0) * 1000

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
