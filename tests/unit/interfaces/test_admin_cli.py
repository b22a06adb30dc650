"""Admin commands act through the deployment's own bus, and refuse shards of another log (issue 12, bug 2:
`altm erase` on a Kafka worker's data dir printed "erased (user)" and erased nothing)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from altm.core import encode
from altm.interfaces.cli import app
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

runner = CliRunner()


def _ingested(tmp_path: Path) -> Path:
    data = tmp_path / "d"
    src = tmp_path / "turns.jsonl"
    src.write_bytes(b"\n".join(encode(make_turn(i, f"note {i} about the billing migration")) for i in range(3)))
    assert runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)]).exit_code == 0
    return data


def test_erase_refuses_shards_whose_log_is_gone(tmp_path: Path) -> None:
    data = _ingested(tmp_path)
    (data / "log.db").unlink()  # what a Kafka worker's data dir looks like: shards, no embedded log
    before = rows(data, "SELECT memory_id FROM memories")
    for args in (["erase", "--scope", SCOPE.path, "--user"], ["retention"], ["sweep"],
                 ["review", "approve", "rej_1", "--scope", SCOPE.path]):
        result = runner.invoke(app, [*args, "--data-dir", str(data)])
        assert result.exit_code == 1, (args, result.output)
        assert "belongs to a Kafka deployment or its log was removed" in " ".join(result.output.split())
    assert rows(data, "SELECT memory_id FROM memories") == before
    assert not (data / "log.db").exists()


def test_erase_reports_what_it_did_and_refusals_with_their_reason(tmp_path: Path) -> None:
    data = _ingested(tmp_path)
    result = runner.invoke(app, ["erase", "--data-dir", str(data), "--scope", SCOPE.path, "--user"])
    assert result.exit_code == 0, result.output
    assert "erased (user)" in result.output and "0 tombstones" not in result.output
    assert rows(data, "SELECT 1 FROM memories") == []
    refused = runner.invoke(app, ["governance", "rollback", "mem_nope", "--data-dir", str(data),
                                  "--scope", SCOPE.path])
    assert refused.exit_code == 1 and "the rollback was refused: no governance decision mem_nope" in refused.output
    unknown = runner.invoke(app, ["erase", "--data-dir", str(data), "--scope", SCOPE.path, "--memory",
                                  "mem_" + "0" * 32])
    assert unknown.exit_code == 1 and "no memory mem_" in unknown.output
