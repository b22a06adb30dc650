"""The hostile-input run (issue 14): over 10,000 seeded lines of every class in the red-team report through
``altm ingest``. Invariants: exit 0, no good line lost, every bad line dead-lettered exactly once with its
reason and line, re-sends refused or unchanged, nothing oversize stored."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
from typer.testing import CliRunner

from altm.app.ingest import parse_line
from altm.interfaces.cli import app as cli
from tests.support.hostile import generate
from tests.support.rows import rows

runner = CliRunner()


def test_hostile_input_loses_no_good_line_and_dead_letters_each_bad_line_once(tmp_path: Path) -> None:
    hostile = generate(seed=7)
    assert len(hostile.lines) >= 10_000
    src = tmp_path / "hostile.jsonl"
    src.write_bytes(hostile.text())
    data = tmp_path / "d"
    result = runner.invoke(cli, ["ingest", "--data-dir", str(data), str(src)], env={"ALTM_EMBEDDER": "none"})
    assert result.exit_code == 0, result.output

    expected = {parse_line(hostile.lines[n - 1].decode()).event_id: n for n in hostile.numbers("stored")}
    l0 = rows(data, "SELECT source_event_id, length(attributes) AS attrs, length(source_id) AS sid "
                    "FROM memories WHERE layer='L0'")
    stored = {r["source_event_id"] for r in l0}
    lost = sorted(n for event_id, n in expected.items() if event_id not in stored)
    assert lost == [], f"good lines lost: {lost[:20]}"
    assert len(l0) == len(expected)  # no bad line stored, no re-send stored twice
    assert max(r["attrs"] for r in l0) < 20_000 and max(r["sid"] or 0 for r in l0) <= 256

    tail = runner.invoke(cli, ["log", "tail", "dlq", "--data-dir", str(data), "-n", "100000"])
    # one JSON document a line: split on newlines only (str.splitlines also splits inside U+2028 and \x1c)
    dead = [orjson.loads(line)["value"] for line in tail.output.split("\n") if line]
    per_line = Counter(d["line"] for d in dead)
    assert sorted(per_line) == hostile.numbers("dead_letter"), "a bad line without a dead letter, or a good one with"
    assert set(per_line.values()) == {1}, "a line dead-lettered more than once"
    assert all(d["stage"] == "ingest" and d["error"].startswith(f"line {d['line']}: ") for d in dead)

    rejected = rows(data, "SELECT reason FROM rejections")
    assert len(rejected) == len(hostile.numbers("rejected"))
    assert all("append-only" in r["reason"] for r in rejected)
    figures = {"lines": len(hostile.lines), **hostile.summary(), "dead_letters": len(dead),
               "stored_l0": len(l0), "rejected_by_writer": len(rejected)}
    print(f"hostile input: {figures}")
