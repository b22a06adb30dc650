"""Replay orchestration: read a deployment's host topics and re-derive everything into a fresh data dir."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from altm.app.replay import Progress, ReplaySummary, read_host_records, replay_records
from altm.bus import Record
from altm.bus.sealing import is_sealed, is_shredded
from altm.core import (
    FORGOTTEN_PREFIX,
    ControlAction,
    ControlEvent,
    DecodeError,
    ProcessingError,
    Settings,
    Topic,
    decode_event,
    partition_for,
    topic_name,
)
from altm.pipeline.processors import control_proposal
from altm.store import DataDirError, ShardLLMCache, ShardSet, erasure_rows, llm_cache_rows
from altm.wiring._adapters import open_bus, resolve
from altm.wiring._deployment import open_embedded


def _keys_for(origin: Settings, records: Sequence[Record]) -> None:
    """The source's key store is there when its log holds sealed records: checked before the target is made,
    so a replay that cannot open them fails with the reason and leaves ``--into`` empty for a rerun."""
    keystore = origin.keystore or ""
    if keystore.startswith("kafka://") or not any(is_sealed(r.value) for r in records):
        return
    path = Path(keystore.removeprefix("sqlite:///"))
    if not path.exists():
        raise DataDirError(f"{origin.data_dir}'s log is sealed and its key store {path} is missing: restore it "
                           "(its master key beside it) and run the replay again")


def _require_empty(target: Path) -> None:
    if target.exists() and any(target.iterdir()):
        raise DataDirError(f"{target} is not empty: replay rebuilds into a fresh data dir")


def carry_erasures(source: Path, target: ShardSet, *, forgets: bool = True, pending: bool = False,
                   replayed: Collection[str] | None = None) -> int:
    """``source``'s tombstones and guard keys, into the target's shards (routed by home): an erasure made
    before the replay's start point, or whose records no longer open, still refuses its content. A forget's
    tombstones only with ``forgets``: a replay from the log's start repeats the forget (its control event is on
    the log, its records still open) and makes them again, after the turns they bury, as the source did.
    ``pending`` (a replay from the log's start): an erasure's tombstones refuse nothing until the replay applies
    that erasure again, so what the source admitted before it, it admits too; with ``replayed`` (the ids of the
    erasure proposals the replayed records will make), only the tombstones of those erasures wait. The others'
    erasures are not on the log (a source that was itself a partial replay): theirs refuse from the start, as in
    the source (pending, they waited for an erasure that never came and refused nothing for ever).
    The review items an erasure removed go too (a decision the source applied before the erasure names an item
    the replay may never make: it is void there, as it is after the erasure). Returns how many tombstones were
    carried."""
    erased = erasure_rows(source)
    tombstones = erased.tombstones
    if not forgets:
        tombstones = [t for t in tombstones if not str(t["reason"]).startswith(FORGOTTEN_PREFIX)]
    at = datetime.now(UTC).isoformat()
    shard = partial(partition_for, partitions=target.partitions)  # routed by home (another count is fine)
    keys: dict[int, list[tuple[str, bytes]]] = {}
    for home, key in erased.guard_keys:
        keys.setdefault(shard(home), []).append((home, key))
    buried: dict[int, list[dict[str, Any]]] = {}
    for row in tombstones:
        buried.setdefault(shard(f"{row['tenant_id']}/{row['workspace_id']}/{row['user_id']}"), []).append(row)
    items: dict[int, list[tuple[str, str, str]]] = {}
    for item in erased.items:
        items.setdefault(shard(item[1]), []).append(item)
    for partition in sorted({*keys, *buried, *items}):
        with target.get(partition).transaction() as tx:  # one transaction per shard
            for home, key in keys.get(partition, ()):
                tx.carry_guard_key(home, key)
            for row in buried.get(partition, ()):
                waits = pending and (replayed is None or row.get("erasure_id") in replayed)
                tx.carry_tombstone(row, at=at, pending=waits)
            for item_id, home, erasure_id in items.get(partition, ()):
                tx.carry_erased_item(item_id, home, erasure_id)
    return len(tombstones)


def erasures_in(records: Sequence[Record], prefix: str) -> set[str]:
    """The ids of the erasure proposals the control events among ``records`` make (``control_proposal`` is pure:
    the id the source's writer recorded on each tombstone as its ``erasure_id``). An erasure request carries ids,
    not content, so it stays readable after any erasure."""
    control = topic_name(Topic.CONTROL, prefix)
    out: set[str] = set()
    for rec in records:
        if rec.topic != control or is_shredded(rec):
            continue
        try:
            event = decode_event(rec.value)
        except DecodeError:
            continue
        if isinstance(event, ControlEvent) and event.action is ControlAction.ERASE:
            with contextlib.suppress(ProcessingError):
                if (made := control_proposal(event)) is not None:
                    out.add(made.event_id)
    return out


def activate_forgotten(shards: ShardSet, ref: str) -> int:
    """The replay met the retention pass ``ref`` (``altm.core.event_ref`` of its id) shredded: the tombstones it
    made in the source, carried pending for an erasure that took them over, refuse from here on in every shard
    (the replay's runtime is idle: everything published before the pass is derived). Returns how many."""
    at = datetime.now(UTC).isoformat()
    count = 0
    for partition in range(shards.partitions):
        with shards.get(partition).transaction() as tx:
            count += len(tx.activate_forgotten(ref, at=at))
    return count


def copy_llm_cache(source: Path, target: ShardSet) -> int:
    """Model answers cached in ``source``'s shards, into the target's (routed by the entry's home)."""
    rows = llm_cache_rows(source)
    for row in rows:
        ShardLLMCache(target.get(partition_for(row[2], target.partitions))).put_many([row])
    return len(rows)


async def replay_into(source: Path, target: Path, *, settings: Settings | None = None, broker: str | None = None,
                      from_offset: int = 0, from_time: datetime | None = None, cache_from: Path | None = None,
                      progress: Progress | None = None) -> ReplaySummary:
    """Re-derive ``source``'s deployment (its embedded log, or ``broker``'s Kafka topics) into ``target``.

    Model answers come from ``cache_from`` (default: the source data dir), and vectors from the source data
    dir's index (a memory with the same id and content), so a replay costs no model calls."""
    _require_empty(target)
    start = time.perf_counter()
    base = settings or Settings()
    origin = resolve(base.model_copy(update={"data_dir": source, "bus": broker}))
    bus = open_bus(origin, read_only=not (origin.bus or "").startswith("kafka://"))
    await bus.start()
    try:
        partitions = await bus.partitions(f"{origin.topic_prefix}turns")
        records = await read_host_records(bus, origin.topic_prefix, from_offset=from_offset, from_time=from_time)
    finally:
        await bus.stop()
    _keys_for(origin, records)
    rebuilt = base.model_copy(update={"data_dir": target, "partitions": partitions, "bus": None, "broker": None,
                                      "vectors": None, "keystore": None})  # the target seals with its own keys
    async with open_embedded(rebuilt, vectors_from=source) as deployment:
        assert deployment.runtime is not None
        cache = cache_from if cache_from is not None else (source if (source / "shards").exists() else None)
        if cache is not None:
            copy_llm_cache(cache, deployment.shards)
        if (source / "shards").exists():
            partial = bool(from_offset or from_time)
            carry_erasures(source, deployment.shards, forgets=partial, pending=not partial,
                           replayed=erasures_in(records, origin.topic_prefix))
        if progress:
            progress("events", len(records))
        processed = await replay_records(deployment.runtime, records, origin.topic_prefix, progress,
                                         shredded=lambda ref: activate_forgotten(deployment.shards, ref))
    skipped = sum(1 for rec in records if is_shredded(rec))
    return ReplaySummary(len(records) - skipped, processed, time.perf_counter() - start, skipped=skipped)
