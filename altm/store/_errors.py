"""Errors of the store."""

from __future__ import annotations


class ShardError(RuntimeError):
    """A shard used in a way it does not allow (closed, read-only, a mutation outside its transaction...)."""
