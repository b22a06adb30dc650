"""A progress bar for long benchmark runs, on stderr (stdout keeps the figures), gone when the run ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextmanager
def progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """``advance(n)`` moves the bar by ``n`` items of ``total``."""
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task(description, total=total)

    def advance(n: int = 1) -> None:
        bar.advance(task, n)

    with bar:
        yield advance
