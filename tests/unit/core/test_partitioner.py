from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as aiokafka_murmur2
from hypothesis import given
from hypothesis import strategies as st

from altm.core import murmur2, partition_for

# Vectors from Apache Kafka's UtilsTest.testMurmur2 (Java signed ints).
KAFKA_VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


def test_murmur2_matches_kafka_test_vectors() -> None:
    for key, expected in KAFKA_VECTORS.items():
        assert murmur2(key.encode()) == expected, key


@given(st.binary(max_size=200), st.integers(min_value=1, max_value=64))
def test_partition_matches_kafkas_default_partitioner(key: bytes, partitions: int) -> None:
    parts = list(range(partitions))
    assert partition_for(key, partitions) == DefaultPartitioner()(key, parts, parts)
    assert (murmur2(key) & 0xFFFFFFFF) == (aiokafka_murmur2(key) & 0xFFFFFFFF)


def test_scope_home_keys_spread_over_partitions() -> None:
    seen = {partition_for(f"t/w/user{i}", 8) for i in range(200)}
    assert seen == set(range(8))
