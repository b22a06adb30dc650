"""Key stores on the test broker: one master key per test run, a store of a topic, waiting for what another
store does, and the bytes of a topic's files on the broker's disk."""

from __future__ import annotations

import base64
import contextlib
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from altm.bus.kafka import KafkaKeyStore
from altm.bus.sealing import Owner

MASTER = secrets.token_bytes(32)
FAST_COMPACTION = {"segment.ms": "1000", "max.compaction.lag.ms": "1000", "file.delete.delay.ms": "0"}
"""A key topic whose segments roll and are compacted within seconds (the defaults are an hour each)."""


def open_store(bootstrap: str, topic: str, **options: object) -> KafkaKeyStore:
    """A key store of ``topic`` wrapped by :data:`MASTER` unless ``master_key`` says otherwise."""
    return KafkaKeyStore(bootstrap, topic, master_key=options.pop("master_key", MASTER), **options)  # type: ignore[arg-type]


def until(check: Callable[[], object], timeout_s: float = 10.0) -> bool:
    """Whether ``check()`` came true within ``timeout_s`` (polled every 50 ms)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def topic_bytes(segments: Path, topic: str) -> bytes:
    """Every file of ``topic``'s partitions on the broker's disk (segments, indexes, files the cleaner is
    swapping), concatenated; a file the cleaner removes meanwhile is skipped."""
    out = b""
    for d in segments.glob(f"{topic}-*"):
        for f in d.iterdir():
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                out += f.read_bytes()
    return out


def key_on_disk(store: KafkaKeyStore, segments: Path, topic: str, home: str) -> tuple[str, bytes]:
    """Make a data key of user ``home`` and wait until its wrapped bytes are in the topic's files on the
    broker's disk; returns its id and those bytes as the record holds them (base64)."""
    kid, _ = store.current(Owner(home))
    wrapped = store._entries[kid].wrapped
    assert wrapped is not None
    needle = base64.b64encode(wrapped)
    assert until(lambda: needle in topic_bytes(segments, topic), 10)
    return kid, needle
