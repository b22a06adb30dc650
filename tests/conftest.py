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


@pytest.fixture
def kafka_segments(kafka_bootstrap: str) -> Path:
    """The test broker's log dir (its topic segments on disk): ALTM_TEST_KAFKA_DATA, else the run dir
    scripts/kafka.sh uses by default."""
    configured = os.environ.get("ALTM_TEST_KAFKA_DATA")
    path = Path(configured) if configured else Path(__file__).parent.parent / ".cache" / "kafka" / "run" / "data"
    if not path.is_dir():
        pytest.fail(f"no Kafka log dir at {path}: set ALTM_TEST_KAFKA_DATA to the broker's log.dirs")
    return path
