from __future__ import annotations

import faulthandler
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from altm.core import Settings

TEST_TIMEOUT_S = float(os.environ.get("ALTM_TEST_TIMEOUT_S", "600"))
"""A test that runs longer than this is taken for a hang: every thread's stack is written to ``_HANG_LOG`` (which
``scripts/test.sh`` prints) and the run exits non-zero, rather than holding CI until its own limit with nothing
to show."""


_HANG_LOG = Path(os.environ.get("ALTM_TEST_HANG_LOG") or Path(tempfile.gettempdir()) / "altm-test-hang.log")
_HANG_FILE = _HANG_LOG.open("w")  # not stderr: pytest captures it while a test runs, and the capture dies with us


@pytest.fixture(autouse=True)
def _hang_watchdog() -> Iterator[None]:
    faulthandler.dump_traceback_later(TEST_TIMEOUT_S, exit=True, file=_HANG_FILE)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


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
