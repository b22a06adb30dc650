from __future__ import annotations

import os
from pathlib import Path

import pytest

from altm.core import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", partitions=4)


@pytest.fixture
def kafka_bootstrap() -> str:
    """The real Apache Kafka broker started by scripts/kafka.sh (ALTM_TEST_KAFKA=host:port)."""
    addr = os.environ.get("ALTM_TEST_KAFKA")
    if not addr:
        if os.environ.get("CI"):
            pytest.fail("ALTM_TEST_KAFKA is not set in CI: scripts/kafka.sh must start the broker")
        pytest.skip("no Kafka broker: run `scripts/kafka.sh start` and set ALTM_TEST_KAFKA=127.0.0.1:19092")
    return addr
