"""Outcomes of processing one record that are not results: retry later, or dead-letter with a reason."""

from __future__ import annotations


class ProcessingError(Exception):
    """The event cannot be processed (e.g. over a configured limit); it goes to the DLQ with this reason."""


class Deferred(Exception):
    """The work item cannot be finished now (model failure, invalid output, budget): retry it later.

    Nothing the processor computed for this item is published (no partial writes)."""
