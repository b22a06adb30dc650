from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from altm.app.ingest import parse_line
from altm.core import DecodeError, TurnEvent, encode
from altm.interfaces.cli import app, sample_path
from tests.support.turns import make_turn

runner = CliRunner()

FLAT = {
    "tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder",
    "session_id": "s1", "turn_id": "t1", "role": "user", "content": "We use PostgreSQL 15.",
    "timestamp": "2026-11-02T09:00:00Z",
}


def test_parse_flat_transcript_line() -> None:
    event = parse_line(orjson.dumps(FLAT).decode())
    assert isinstance(event, TurnEvent)
    assert event.scope.home == "acme/platform/dana" and event.scope.agent_id == "coder"
    assert event.content == "We use PostgreSQL 15."


def test_parse_full_event_line() -> None:
    turn = make_turn(3)
    assert parse_line(encode(turn).decode()) == turn


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"tenant_id": "acme", ', "invalid JSON"),
        ("[]", "must be a JSON object"),
        (orjson.dumps({**FLAT, "role": "oracle"}).decode(), "role"),
        (orjson.dumps({k: v for k, v in FLAT.items() if k != "content"}).decode(), "missing ['content']"),
        (orjson.dumps({**FLAT, "mood": "happy"}).decode(), "unknown field(s) ['mood']"),
        (orjson.dumps({**FLAT, "timestamp": "last tuesday"}).decode(), "timestamp"),
        ('{"event_type": "proposal"}', "invalid proposal event"),
    ],
)
def test_bad_lines_are_explained(line: str, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        parse_line(line)
    assert message in str(info.value)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ingest_dead_letters_bad_lines_with_line_numbers_and_exits_zero(tmp_path: Path) -> None:
    good2 = {**FLAT, "turn_id": "t2", "content": "The deadline is December 15."}
    src = _write(tmp_path / "in.jsonl", [
        orjson.dumps(FLAT).decode(),
        '{"tenant_id": "acme", "truncated',
        orjson.dumps(good2).decode(),
        orjson.dumps({**FLAT, "turn_id": "t3", "role": 5}).decode(),
    ])
    data = tmp_path / "data"
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)])
    assert result.exit_code == 0, result.output
    assert "4 lines: 2 published, 2 dead-lettered at input" in " ".join(result.output.split())

    result = runner.invoke(app, ["stats", "--data-dir", str(data), "--json"])
    assert result.exit_code == 0, result.output
    stats = orjson.loads(result.output)
    assert stats["layers"]["L0"] == 2 and stats["kinds"]["message"] == 2
    assert stats["dlq"] == 2 and stats["rejected"] == 0
    assert set(stats) >= {"layers", "kinds", "graph", "dlq", "rejected"}
    assert set(stats["graph"]) == {"nodes", "edges"}

    result = runner.invoke(app, ["log", "tail", "dlq", "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    dead = [orjson.loads(line)["value"] for line in result.output.splitlines()]
    assert sorted(d["line"] for d in dead) == [2, 4]
    assert all(d["stage"] == "ingest" for d in dead)
    assert any("line 2: invalid JSON" in d["error"] for d in dead)


def test_oversized_line_is_dead_lettered_at_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An oversize turn is refused before it is published (it was copied onto the turns topic first, then
    dead-lettered by capture: stored twice)."""
    monkeypatch.setenv("ALTM_MAX_CONTENT_BYTES", "100")
    src = _write(tmp_path / "in.jsonl", [orjson.dumps({**FLAT, "content": "y" * 101}).decode(),
                                         orjson.dumps({**FLAT, "turn_id": "t2"}).decode()])
    result = runner.invoke(app, ["ingest", "--data-dir", str(tmp_path / "d"), str(src)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "1 published, 1 dead-lettered at input, 0 dead-lettered in the pipeline" in out
    tail = runner.invoke(app, ["log", "tail", "dlq", "--data-dir", str(tmp_path / "d")])
    (dead,) = [orjson.loads(line)["value"] for line in tail.output.splitlines()]
    assert dead["line"] == 1 and "over the limit of 100" in dead["error"]


def test_stats_on_a_missing_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["stats", "--data-dir", str(tmp_path / "nope"), "--json"])
    assert result.exit_code == 1
    assert "not an ALTM data dir" in result.output


def test_ingest_sample_then_state_hash_is_reproducible(tmp_path: Path) -> None:
    hashes = []
    for name in ("a", "b"):
        data = tmp_path / name
        assert runner.invoke(app, ["ingest", "--data-dir", str(data), str(sample_path())]).exit_code == 0
        result = runner.invoke(app, ["state-hash", "--data-dir", str(data)])
        assert result.exit_code == 0
        hashes.append(result.output.strip())
    assert hashes[0] == hashes[1] and len(hashes[0]) == 64
    # a different partition count gives the same derived state
    data = tmp_path / "c"
    runner.invoke(app, ["ingest", "--data-dir", str(data), "--partitions", "2", str(sample_path())])
    assert runner.invoke(app, ["state-hash", "--data-dir", str(data)]).output.strip() == hashes[0]


def test_memories_listing_is_filtered_by_scope(tmp_path: Path) -> None:
    data = tmp_path / "d"
    runner.invoke(app, ["ingest", "--data-dir", str(data), str(sample_path())])
    result = runner.invoke(app, ["memories", "--data-dir", str(data), "--scope", "globex/ops/sam/coder", "--json"])
    rows = orjson.loads(result.output)
    assert rows and {r["scope"] for r in rows} == {"globex/ops/sam/coder"}
    result = runner.invoke(app, ["memories", "--data-dir", str(data), "--scope", "globex/ops/sam/coder",
                                 "--layer", "L0", "--json"])
    (row,) = orjson.loads(result.output)
    assert row["content"].startswith("I prefer Go")
    bad = runner.invoke(app, ["memories", "--data-dir", str(data), "--scope", "globex/ops"])
    assert bad.exit_code == 1 and "TENANT/WORKSPACE/USER/AGENT" in bad.output


def test_validate_reports_bad_lines(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [orjson.dumps(FLAT).decode(), "{nope"])
    result = runner.invoke(app, ["validate", str(src)])
    assert result.exit_code == 1 and "line 2: invalid JSON" in result.output
