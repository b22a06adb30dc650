"""One record never stops a partition (issue 14: F1, F2, F2b, F8, F11, F16). Bad input is dead-lettered with
the stage, the reason and (for file input) its line, once; everything else is ingested."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from altm.bus import OutgoingRecord
from altm.bus.embedded import EmbeddedLog
from altm.core import Settings, TurnEvent, decode_dead_letter, encode
from altm.interfaces.cli import app as cli
from tests.support.memories import embedded, running, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

runner = CliRunner()


def _flat(turn_id: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
            "session_id": "s1", "turn_id": turn_id, "role": "user", "content": content,
            "timestamp": "2026-11-02T09:00:00Z", **extra}


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"k": value}
    return value


BAD_LINES = {
    "ts-overflow-negative-tz": _flat("b1", "bad", timestamp="9999-12-31T23:59:59-14:00"),
    "ts-overflow-positive-tz": _flat("b2", "bad", timestamp="0001-01-01T00:00:00+14:00"),
    "ts-year-one": _flat("b3", "bad", timestamp="0001-01-01T00:00:00Z"),
    "metadata-depth-300": _flat("b4", "bad", metadata=_nested(300)),
    "metadata-1mb": _flat("b5", "bad", metadata={"blob": "x" * 1_000_000}),
    "source-id-1mb": _flat("b6", "bad", source_id="s" * 1_000_000),
    "metadata-infinite-number": _flat("b7", "bad", metadata={"n": 1e400}),
    "content-over-limit": _flat("b8", "bad" + "x" * 70_000),  # refused before it is copied onto the log
    "tenant-dot-dot": {**_flat("b9", "bad"), "tenant_id": ".."},
    "control-ts-overflow": {"event_type": "control", "action": "forget", "target_ids": ["mem_x"],
                            "scope": orjson.loads(encode(make_turn(1)))["scope"],
                            "timestamp": "9999-12-31T23:59:59-14:00"},
}


def _dead_letters(data: Path) -> list[dict[str, Any]]:
    result = runner.invoke(cli, ["log", "tail", "dlq", "--data-dir", str(data), "-n", "1000"])
    assert result.exit_code == 0, result.output
    return [orjson.loads(line)["value"] for line in result.output.split("\n") if line]


def test_each_bad_line_is_dead_lettered_once_and_every_good_line_is_ingested(tmp_path: Path) -> None:
    lines = []
    for i, bad in enumerate(BAD_LINES.values()):
        lines.append(json.dumps(_flat(f"g{i}", f"good message {i}")))
        lines.append(json.dumps(bad))
    lines.append(json.dumps(_flat("g-last", "the last good message")))
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = tmp_path / "d"
    result = runner.invoke(cli, ["ingest", "--data-dir", str(data), str(src)])
    assert result.exit_code == 0, result.output  # F1: main crashed (OverflowError / serialization depth)
    stored = {r["content"] for r in rows(data, "SELECT content FROM memories WHERE layer='L0'")}
    assert stored == {f"good message {i}" for i in range(len(BAD_LINES))} | {"the last good message"}
    dead = _dead_letters(data)
    assert sorted(d["line"] for d in dead) == [2 * i + 2 for i in range(len(BAD_LINES))]  # each once, with line
    assert all(d["stage"] == "ingest" and d["error"] for d in dead)
    assert not rows(data, "SELECT 1 FROM memories WHERE length(attributes) > 100000 OR length(source_id) > 1000")
    turns = runner.invoke(cli, ["log", "tail", "turns", "--data-dir", str(data), "-n", "1000"])
    assert "x" * 70_000 not in turns.output


def test_a_dead_letter_names_the_input_line_and_keeps_a_bounded_original(settings: Settings) -> None:
    """F16: a record that fails in the pipeline names the file line it came from; a 10 MB original is kept
    in part (its first bytes, size and hash), not copied whole onto the dead-letter topic."""
    from altm.bus import dead_letter_record, host_record
    from altm.bus._base import Record

    huge = make_turn(1, "y" * 10_000_000)
    out = host_record(settings, huge, line=42)
    rec = Record(out.topic, 0, 7, out.key, out.value, out.headers)
    dead = decode_dead_letter(dead_letter_record(settings, rec, stage="capture", error="too big",
                                                 original=rec.value).value)
    assert dead.line == 42 and dead.source_offset == 7
    assert dead.original_bytes == len(out.value) and dead.original_sha256 is not None
    assert len(dead.original) == 256 * 1024 and out.value.startswith(dead.original.encode())


def test_an_integer_no_json_reader_keeps_exact_is_refused_where_python_builds_the_event() -> None:
    """JSON readers (orjson included) read 2**100 as a double; a Python producer would pass the int itself,
    which the encoder cannot write: it is refused when the event is built, with the reason."""
    with pytest.raises(ValueError, match=r"beyond ±2\^53-1"):
        TurnEvent.model_validate({**make_turn(1).model_dump(), "metadata": {"n": 2**100}})


async def test_a_poison_record_on_the_turns_topic_is_dead_lettered_and_the_partition_moves_on(
        settings: Settings) -> None:
    """F2: a non-Python producer can put any bytes on the topic; main crash-looped on these."""
    poisons = [json.dumps({**orjson.loads(encode(make_turn(1))), "metadata": _nested(300)}).encode(),
               orjson.dumps({**orjson.loads(encode(make_turn(2))), "timestamp": "0001-01-01T00:00:00+14:00"})]
    s = settings.model_copy(update={"embedder": "none"})
    async with running(s) as rt:
        await rt.log.publish_many([OutgoingRecord("altm.turns", p, key=SCOPE.home) for p in poisons])
        await rt.publish([make_turn(3, "the good message after the poison")])
        await rt.run_until_idle()
        dead = [decode_dead_letter(r.value) for r in await rt.log.read_all(["altm.dlq"])]
    assert [d.stage for d in dead] == ["capture", "capture"]
    assert {r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")} == {
        "the good message after the poison"}


async def test_a_failing_step_does_not_lose_its_batch(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """F2b: a stage step that raised left its consumer past the batch; the next commit skipped it for good."""
    s = settings.model_copy(update={"embedder": "none"})
    real = EmbeddedLog.publish_many
    failures = {"left": 1}

    async def flaky(self: EmbeddedLog, records: Any) -> Any:
        if failures["left"] and any(r.topic == "altm.proposals" for r in records):
            failures["left"] -= 1
            raise OSError("disk full, for a moment")
        return await real(self, records)

    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(i, f"turn {i} of another tenant's batch") for i in range(5)])
        monkeypatch.setattr(EmbeddedLog, "publish_many", flaky)
        with pytest.raises(OSError):
            await rt.step()
        await rt.run_until_idle()
    assert len(rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L0'")) == 5  # nothing skipped


async def test_a_dated_query_over_a_memory_dated_year_one_does_not_fail(settings: Settings) -> None:
    """F8: the time prior subtracted days from year 1 (OverflowError, HTTP 500) for any query naming a date."""
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "We use PostgreSQL 15 for billing.")])
        await rt.run_until_idle()
        (row,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0'")
        for shard in rt.shards.existing():  # a row of year 1, as main accepted at ingest
            with shard.transaction() as tx:
                old = tx.memory_row(row["memory_id"])
                if old is not None:
                    tx.update_memory(old, {**old, "valid_from": datetime(1, 1, 1, tzinfo=UTC).isoformat()},
                                     at="now", proposal_id="test", actor="test")
        hits = d.app.search(SCOPE, "s1", "what about PostgreSQL in June?").hits
    assert hits


async def test_a_worker_retries_a_batch_until_its_outputs_are_published() -> None:
    """F2b on Kafka: a faust agent that raised would acknowledge the record it never published outputs for;
    the agents hand each record to ``handle_until_done``, which waits the failure out."""
    from altm.pipeline._drivers import handle_until_done

    calls: list[int] = []

    class Flaky:
        name = "flaky"

        async def handle(self, records: Any) -> int:
            calls.append(len(records))
            if len(calls) < 3:
                raise OSError("broker unreachable, for a moment")
            return len(records)

    driver: Any = Flaky()
    handled = await handle_until_done(driver, ["r1", "r2"], first_delay_s=0.001)  # type: ignore[list-item]
    assert handled == 2 and calls == [2, 2, 2]


async def test_a_message_that_breaks_fold_is_dead_lettered_and_other_sessions_get_their_capsules(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fold folds a batch at once; a message that tripped a bug in it failed the whole batch, so no session of
    the batch got its capsule and the step raised every time it was tried. Now the batch is folded change by
    change: the session with that message gets dead letters (the stage, the reason), the others their
    capsules."""
    from altm.pipeline.processors import fold

    sections_of = fold._sections_of

    def tripped(msg: Any) -> dict[str, list[str]]:
        if "trips the fold" in msg.content:
            raise ValueError("a bug this message trips")
        return sections_of(msg)

    monkeypatch.setattr(fold, "_sections_of", tripped)
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "We decided to ship on Friday.", session="ok"),
                          make_turn(2, "This one trips the fold.", session="bad"),
                          make_turn(3, "We decided to use Postgres.", session="ok")])
        await rt.run_until_idle()
        letters = [decode_dead_letter(r.value) for r in await rt.log.read_all(["altm.dlq"])]
    capsules = {r["session_id"] for r in rows(s.data_dir, "SELECT session_id FROM memories WHERE layer='L1'")}
    assert capsules == {"ok"}
    assert [(dl.stage, "a bug this message trips" in dl.error) for dl in letters] == [("fold", True)]
