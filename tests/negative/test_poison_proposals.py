"""No proposal can stop the writer (issue 14, F0: one `POST /v1/review {"item_id": "rej_9999…"}` by any tenant made
the writer raise on an integer SQLite cannot hold, and every later write of every tenant failed, erasure
included). Ids are validated at the API, and whatever reaches the writer ends as applied, rejected with a
reason, deferred or dead-lettered: the partition moves on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic import ValidationError

from altm.bus import Record
from altm.core import (
    ChangeStatus,
    ControlAction,
    ControlEvent,
    ReviewDecision,
    Settings,
    encode,
    partition_for,
)
from altm.interfaces.cli import app as cli
from altm.pipeline import Writer
from altm.pipeline.processors import CaptureProcessor, ProcessorContext, control_proposal
from altm.store import ShardSet
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

N = 4
TOPIC = "altm.proposals"
HUGE = "rej_99999999999999999999999"


@pytest.fixture
def writer(settings: Settings) -> Iterator[Writer]:
    shards = ShardSet(settings.data_dir, N)
    yield Writer(shards, settings)
    shards.close()


def _record(value: bytes, offset: int, key: str = SCOPE.home) -> Record:
    return Record(TOPIC, partition_for(key, N), offset, key, value)


def _review_bytes(item_id: str) -> bytes:
    """A review proposal as a producer that skips validation would write it."""
    control = ControlEvent(event_id="ctl_1", scope=SCOPE, timestamp=make_turn(1).timestamp,
                           action=ControlAction.REVIEW_DECISION, target_ids=("rej_1",),
                           payload={"item_id": "rej_1", "decision": "approve"})
    proposal = control_proposal(control)
    assert proposal is not None
    wire = orjson.loads(encode(proposal))
    wire["review"]["item_id"] = item_id
    return orjson.dumps(wire)


def test_review_ids_are_validated_before_they_reach_the_log() -> None:
    with pytest.raises(ValidationError):
        ReviewDecision(item_id=HUGE, decision="approve")
    assert ReviewDecision(item_id="rej_999999999999999999", decision="reject").item_kind == "rejection"


def test_the_cli_refuses_an_out_of_range_review_id(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    src = tmp_path / "t.jsonl"
    src.write_bytes(encode(make_turn(1, "hello")))
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", "--data-dir", str(tmp_path / "d"), str(src)]).exit_code == 0
    result = runner.invoke(cli, ["review", "approve", HUGE, "--data-dir", str(tmp_path / "d"), "--scope", SCOPE.path])
    assert result.exit_code == 1 and "item_id" in result.output
    again = runner.invoke(cli, ["ingest", "--data-dir", str(tmp_path / "d"), str(src)])
    assert again.exit_code == 0, again.output  # the data dir still takes writes


async def test_an_unappliable_proposal_is_rejected_and_the_partition_moves_on(writer: Writer) -> None:
    outcome = writer.apply(_record(_review_bytes(HUGE), 0), N)  # raised OverflowError and blocked the partition
    (dead,) = outcome.dead_letters  # a proposal no model accepts: malformed, dead-lettered with the reason
    assert dead.stage == "writer" and "item_id" in dead.error
    (turn,) = await CaptureProcessor().process(make_turn(2, "the next message"), ProcessorContext(settings=Settings()))
    (after,) = writer.apply(_record(encode(turn), 1), N).changes
    assert after.status is ChangeStatus.COMMITTED
    assert writer.resume_offset(TOPIC, partition_for(SCOPE.home, N)) == 2


async def test_an_op_that_fails_half_way_leaves_nothing_behind(writer: Writer, settings: Settings) -> None:
    """A compress signal without a level failed after the signal row was written (found in the writer split)."""
    (turn,) = await CaptureProcessor().process(make_turn(1, "hello"), ProcessorContext(settings=Settings()))
    writer.apply(_record(encode(turn), 0), N)
    signal = {"event_type": "proposal", "schema_version": 1, "event_id": "prop_sig", "op": "signal",
              "processor": "lifecycle", "scope": orjson.loads(SCOPE.model_dump_json()),
              "timestamp": "2026-11-02T09:00:00Z",
              "signal": {"memory_id": turn.target_id, "signal_id": "s1", "kind": "compress",
                         "at": "2026-11-02T09:00:00Z"}}
    (change,) = writer.apply(_record(orjson.dumps(signal), 1), N).changes
    assert change.status is ChangeStatus.REJECTED and "could not be applied" in (change.reason or "")
    assert rows(settings.data_dir, "SELECT * FROM lifecycle_signals") == []  # the half-applied op rolled back
    assert rows(settings.data_dir, "SELECT reason FROM rejections")[0]["reason"] == change.reason


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
SPECIAL: st.SearchStrategy[Any] = st.sampled_from([
    2**63, -(2**63) - 1, 10**30, "", "x" * 5000, "rej_" + "9" * 40, "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00", [], {}, None, -1, 0.5,
])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _replaced(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[head] = _replaced(doc[head], tuple(rest), new)
    return copy


async def _valid_proposals() -> list[dict[str, Any]]:
    """One valid proposal of several ops, as wire dicts (the templates the property test corrupts)."""
    (turn,) = await CaptureProcessor().process(make_turn(1, "hello"), ProcessorContext(settings=Settings()))
    docs = [orjson.loads(encode(turn)), orjson.loads(_review_bytes("rej_1"))]
    for action, payload in ((ControlAction.ERASE, {"target": "memory", "memory_id": turn.target_id}),
                            (ControlAction.ROLLBACK, {"decision_id": "prop_x"})):
        made = control_proposal(ControlEvent(event_id=f"ctl_{action.value}", scope=SCOPE,
                                             timestamp=make_turn(1).timestamp, action=action, payload=payload))
        assert made is not None
        docs.append(orjson.loads(encode(made)))
    return docs


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_no_value_in_any_proposal_field_stops_the_writer(tmp_path_factory: pytest.TempPathFactory,
                                                               data: st.DataObject) -> None:
    templates = await _valid_proposals()
    doc = data.draw(st.sampled_from(templates))
    path = data.draw(st.sampled_from(list(_paths(doc))))
    value = data.draw(SPECIAL | JSON)
    shards = ShardSet(tmp_path_factory.mktemp("w"), N)
    try:
        writer = Writer(shards, Settings(partitions=N))
        corrupted = json.dumps(_replaced(doc, path, value)).encode()  # any JSON a foreign producer may write
        outcome = writer.apply(_record(corrupted, 0), N)  # never raises
        assert outcome.changes or outcome.dead_letters
        (turn,) = await CaptureProcessor().process(make_turn(2, "next"), ProcessorContext(settings=Settings()))
        after = writer.apply(_record(encode(turn), 1), N).changes  # (a relinked neighbour may follow it)
        assert after[0].status is ChangeStatus.COMMITTED  # the partition moved on
    finally:
        shards.close()
