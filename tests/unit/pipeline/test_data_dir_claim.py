"""A process's claim on its data dir (``DATA_DIR/workers.lock``, issue 13): workers may share one, but a worker
with standby copies or dropping unowned shards, and a read replica, write or delete shards of partitions they do
not own and need it alone. Documented and not enforced before; the review of the first version found the drop
mode and the replica left out, a descriptor leaked and a raw error on a filesystem without ``flock``, the lock
kept by a stop cut short, and a deletion left unflushed by ``EmbedProcessor.put(current=)``."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from altm.bus import OutgoingRecord
from altm.core import Settings, UpsertMemoryProposal
from altm.pipeline import WriterDriver
from altm.pipeline.processors import CaptureProcessor, EmbedProcessor, ProcessorContext, default_processors
from altm.pipeline.runtime._claim import DataDirClaim
from altm.pipeline.runtime.kafka import DataDirTaken, KafkaRuntime
from altm.pipeline.runtime.replica import ReplicaRuntime
from altm.pipeline.writer import Writer
from altm.store import DataDirError, DeferredWork, ShardSet
from altm.vectors.edge import EdgeVectorIndex
from tests.support.lanes import Member
from tests.support.lanes import until as _until
from tests.support.turns import make_turn
from tests.unit.pipeline.test_replica import _Log
from tests.unit.pipeline.test_standby import _Toy
from tests.unit.pipeline.test_writer_restore import _log

ALONE = "a test needs it alone"


def _runtime(settings: Settings, shards: ShardSet) -> Any:
    return KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")


def _worker(tmp_path: Path, **modes: Any) -> Settings:
    return Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none", **modes)


@pytest.mark.parametrize("mode", [{"worker_standby": True}, {"worker_drop_unowned_after_s": 30}])
@pytest.mark.parametrize("second_alone", [True, False])
def test_a_worker_that_needs_its_data_dir_alone_never_shares_it(tmp_path: Path, mode: dict[str, Any],
                                                                second_alone: bool) -> None:
    """A standby worker writes the shards of the other workers' partitions; a dropping one deletes them (after
    handing over, then deleting, their deferred work). The second of the two to start is refused, with the
    reason; workers without either still share a data dir."""
    alone, plain = _worker(tmp_path, **mode), _worker(tmp_path)
    shards = ShardSet(alone.data_dir, 4)
    first, second = (_runtime(plain, shards), _runtime(alone, shards)) if second_alone else (
        _runtime(alone, shards), _runtime(plain, shards))
    first._claim.take()
    try:
        with pytest.raises(DataDirTaken, match="data dir of its own"):
            second._claim.take()
        sharing = [_runtime(plain, shards) for _ in range(2)]
        first._claim.release()
        for rt in sharing:
            rt._claim.take()
        for rt in sharing:
            rt._claim.release()
    finally:
        first._claim.release()
        shards.close()
    again = DataDirClaim(alone.data_dir, alone=ALONE)
    again.take()  # every claim released: taken again
    again.release()


async def test_a_worker_refused_its_data_dir_joins_no_group(tmp_path: Path) -> None:
    settings = _worker(tmp_path, worker_standby=True)
    shards = ShardSet(settings.data_dir, settings.partitions)
    other = DataDirClaim(settings.data_dir, alone=None)
    other.take()
    try:
        rt = _runtime(settings, shards)
        with pytest.raises(DataDirTaken):
            await rt.start()
        assert rt._member is None  # refused before the runtime reached for the broker
    finally:
        other.release()
        shards.close()


def _no_flock(fd: int, op: int) -> None:
    raise OSError(errno.ENOLCK, "No locks available")  # NFS mounted nolock, Lustre without -o flock, ...


def test_a_data_dir_without_flock_leaks_no_descriptor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fcntl, "flock", _no_flock)
    claim = DataDirClaim(tmp_path, alone=ALONE)
    before = len(list(Path("/proc/self/fd").iterdir()))
    for _ in range(3):  # a supervisor retrying start() in one process
        with contextlib.suppress(DataDirError):
            claim.take()
    assert len(list(Path("/proc/self/fd").iterdir())) == before, "take() leaked its descriptor on an OSError of flock"


def test_a_data_dir_without_flock_refuses_a_claim_to_be_alone_and_warns_of_one_to_share(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A claim to be alone cannot be checked there: refused, with the reason (not a raw OSError). A claim to
    share is given with a warning: a worker with a server index ran on such a filesystem before, unchecked."""
    monkeypatch.setattr(fcntl, "flock", _no_flock)
    with pytest.raises(DataDirError, match=r"cannot lock .*No locks available.*cannot check"):
        DataDirClaim(tmp_path, alone=ALONE).take()
    with caplog.at_level(logging.WARNING, logger="altm.worker"):
        shared = DataDirClaim(tmp_path, alone=None)
        shared.take()
        shared.release()
    assert "is not checked" in caplog.text


async def test_a_stop_cut_short_releases_the_data_dir(tmp_path: Path) -> None:
    """``stop`` awaits the lanes (up to ALTM_WORKER_REVOKE_WAIT_S each) before its try/finally: a caller's
    timeout or cancellation there left the lock held for the life of the process."""
    s = _worker(tmp_path, worker_standby=True)
    shards = ShardSet(s.data_dir, 4)
    rt = _runtime(s, shards)
    rt._member = Member(set(), committed=None)  # as after start()
    rt._claim.take()

    async def busy(timeout_s: float) -> None:  # a batch in flight
        await asyncio.sleep(30)

    rt.lanes[0].stop = busy
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(rt.stop(), 0.2)
        again = DataDirClaim(s.data_dir, alone=ALONE)  # the same worker started again in this process
        again.take()
        again.release()
    finally:
        rt._claim.release()
        shards.close()


async def test_what_current_deletes_is_flushed_before_put_returns(tmp_path: Path, settings: Settings) -> None:
    toy = _Toy()
    index = EdgeVectorIndex(tmp_path / "vectors", toy.collection, toy.dim)
    index.open()
    calls: list[str] = []
    real_delete, real_flush = index.delete, index.flush

    def delete(memory_ids: Sequence[str]) -> None:
        calls.append("delete")
        real_delete(memory_ids)

    def flush() -> None:
        calls.append("flush")
        real_flush()

    index.delete, index.flush = delete, flush  # type: ignore[method-assign]
    (prop,) = await CaptureProcessor().process(make_turn(1), ProcessorContext(settings=settings))
    assert isinstance(prop, UpsertMemoryProposal)
    try:
        await EmbedProcessor(toy, index).put([prop.memory], [], current=lambda memories: [])  # erased meanwhile
    finally:
        index.close()
    assert calls == ["delete", "flush"], "put() returned with its deletion not durable ('durable when this returns')"


async def test_a_read_replica_is_refused_the_data_dir_of_a_running_worker(tmp_path: Path) -> None:
    """ALTM_READ_REPLICA=true with the workers' ALTM_DATA_DIR (the data dir the service read without it): the
    replica applied every partition's proposals into the worker's shards, ahead of the worker, which then took
    them for applied and published no change of them (no extraction, no embedding downstream)."""
    s = _worker(tmp_path, read_replica=True)
    log = await _log(s, 3)
    worker = DataDirClaim(s.data_dir, alone=None)  # what a running worker (no standby) holds
    worker.take()
    shards, mine = ShardSet(s.data_dir, 4), ShardSet(s.data_dir, 4)
    replica = ReplicaRuntime(s, shards, _Log(list(log)))
    published: list[OutgoingRecord] = []

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        published.extend(records)

    try:
        refused = False
        try:
            await replica.start("log-id")
        except DataDirTaken:
            refused = True
        if not refused:
            await _until(lambda: replica.applied == len(log))
            await WriterDriver(Writer(mine, s), DeferredWork(mine, s), publish, "log-id").handle(log)  # the owner
    finally:
        await replica.stop()
        worker.release()
        shards.close()
        mine.close()
    assert refused, f"the replica ran on the worker's data dir; the worker then published {len(published)} change(s)"


def test_altm_worker_is_refused_a_taken_data_dir_before_it_reaches_for_the_broker(tmp_path: Path) -> None:
    """``altm worker`` bound the data dir's shards to the log and opened its vector index before the runtime
    claimed the data dir: a second standby worker on the same data dir wrote the first one's shards (their log
    binding), and was refused by the vector index's lock or by a broker that was away, never with the reason."""
    from altm.wiring import run_worker

    settings = _worker(tmp_path, worker_standby=True)
    settings.data_dir.mkdir(parents=True)
    running = DataDirClaim(settings.data_dir, alone=ALONE)  # the first standby worker
    running.take()
    try:
        with pytest.raises(DataDirTaken, match="data dir of its own"):
            run_worker(settings)  # the broker (port 1) is never reached: the refusal comes first
    finally:
        running.release()
    assert not list(settings.data_dir.glob("shard-*")), "the refused worker wrote shards of the data dir"


async def test_a_claim_handed_to_the_runtime_is_its_callers_to_release(tmp_path: Path) -> None:
    """``altm worker`` closes the shards and the vector index after the runtime stopped: the claim it handed in
    must hold until then, or a second worker could take the data dir while they are still open."""
    settings = _worker(tmp_path, worker_standby=True)
    shards = ShardSet(settings.data_dir, settings.partitions)
    claim = DataDirClaim(settings.data_dir, alone=ALONE)
    claim.take()
    rt = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id",
                      claim=claim)
    try:
        with contextlib.suppress(Exception):
            await rt.start()  # no broker on port 1: the start fails
        await rt.stop()
        with pytest.raises(DataDirTaken):
            DataDirClaim(settings.data_dir, alone=ALONE).take()
    finally:
        claim.release()
        shards.close()
    again = DataDirClaim(settings.data_dir, alone=ALONE)
    again.take()  # released by its caller: free again
    again.release()
