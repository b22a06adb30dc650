"""Errors of the store."""

from __future__ import annotations


class StoreUnavailable(RuntimeError):
    """The store itself failed (disk full, I/O error, locked for too long), not what was asked of it: the
    caller retries the same work later; it is never held against the proposal."""


class ShardError(RuntimeError):
    """A shard used in a way it does not allow (closed, read-only, a mutation outside its transaction...)."""
