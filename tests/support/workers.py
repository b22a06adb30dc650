"""`altm worker` processes for the Kafka tests: started against a broker, stopped gracefully."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from signal import SIGTERM
from typing import IO

Process = subprocess.Popen[bytes]


_OUTPUT: dict[int, IO[bytes]] = {}
"""The file each capturing worker writes its output to, by pid (a pipe nobody reads until ``stop`` fills up,
64 KiB on Linux, and the worker blocks on its next log line)."""


def start_worker(bootstrap: str, data_dir: Path, env: Mapping[str, str], *, partitions: int = 4,
                 capture: bool = False) -> Process:
    """A faust worker on ``bootstrap`` (host:port); ``capture`` keeps its output for ``stop`` and ``output``."""
    out: IO[bytes] | int = tempfile.TemporaryFile() if capture else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "altm", "worker", "--broker", f"kafka://{bootstrap}", "--data-dir", str(data_dir),
         "--partitions", str(partitions)],
        env=dict(env), stdout=out, stderr=subprocess.STDOUT if capture else subprocess.DEVNULL,
    )
    if not isinstance(out, int):
        _OUTPUT[process.pid] = out
    return process


def output(process: Process) -> bytes:
    """What a worker started with ``capture`` wrote so far (empty for one without)."""
    file = _OUTPUT.get(process.pid)
    if file is None:
        return b""
    file.seek(0)
    return file.read()


def stop(*processes: Process | None, timeout_s: float = 60.0) -> list[bytes]:
    """SIGTERM to every process still running, then wait for each (killed after ``timeout_s``); returns
    what each one wrote (empty unless started with ``capture``)."""
    running = [p for p in processes if p is not None]
    for p in running:
        if p.poll() is None:
            p.send_signal(SIGTERM)
    outputs = []
    for p in running:
        try:
            p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        outputs.append(output(p))
        file = _OUTPUT.pop(p.pid, None)
        if file is not None:
            file.close()
    return outputs


async def wait_until_idle(bootstrap: str, prefix: str, *workers: Process, data_dir: Path,
                          timeout_s: float = 180.0) -> None:
    """Until the workers' consumer group has consumed and committed every record of every pipeline topic and
    no shard of ``data_dir`` holds an unpublished outbox row (lag 0 and an empty outbox, seen twice a second
    apart: nothing buffered between two stages). Not a quiet-period guess."""
    from altm.bus.kafka import KafkaBus
    from altm.core import Topic, topic_name

    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        topics = [topic_name(t, prefix) for t in Topic if t is not Topic.DLQ]
        deadline = time.monotonic() + timeout_s
        idle_once = False
        while time.monotonic() < deadline:
            for worker in workers:
                assert worker.poll() is None, "a worker exited"
            lag = await bus.group_lag(f"{prefix}workers", topics)
            idle = lag == 0 and _outbox_rows(data_dir) == 0
            if idle and idle_once:
                return
            idle_once = idle
            await asyncio.sleep(1.0)
    finally:
        await bus.stop()
    raise AssertionError(f"the workers did not consume every topic within {timeout_s} s")


def _outbox_rows(data_dir: Path) -> int:
    """Outbox rows committed by a writer but not yet published, over every shard of ``data_dir``."""
    total = 0
    for path in sorted((data_dir / "shards").glob("shard-*.db")):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            total += int(conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])
        except sqlite3.OperationalError:  # a shard still being created
            pass
        finally:
            conn.close()
    return total
