"""Kafka's default partitioner (murmur2 of the key bytes), used by both runtimes.

A port of ``org.apache.kafka.common.utils.Utils.murmur2`` and ``toPositive(h) % n``, so a key lands on the
same partition whether it travels through the embedded log or through Apache Kafka.
"""

from __future__ import annotations

from functools import lru_cache

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """32-bit murmur2 exactly as Kafka computes it, returned as a signed Java int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    length4 = length // 4
    for i in range(length4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str | bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    return _positive_hash(bytes(key) if isinstance(key, bytearray) else key) % partitions


@lru_cache(maxsize=65536)
def _positive_hash(key: str | bytes) -> int:
    """murmur2 of the key's bytes, made positive as Kafka does; kept for the most recent keys (a scope home is
    routed again for every record of its user, and murmur2 in Python costs a few microseconds a key)."""
    return murmur2(key.encode("utf-8") if isinstance(key, str) else key) & 0x7FFFFFFF
