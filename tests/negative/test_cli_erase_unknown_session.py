"""``altm erase --session S`` with a session id that the scope does not have (a typo, or a session of another
user/agent) exits 0 and prints "erased (session)".

What a user expects: the brief of an erasure is compliance — an operator needs to know whether the content is
gone. ``altm erase --memory ID`` already refuses an id that is not in the scope ("no memory … in scope …",
exit 1), and README says a refused request "fails with the writer's reason". An erasure that matched nothing
(``--session`` of another user, or a mistyped session id) should likewise fail (exit ≠ 0) saying that no such
session exists in that scope, instead of confirming an erasure that removed nothing while the real session's
content stays recallable.

Actual: exit 0, "erased (session); 0 tombstones for other/…", and the session's messages are still stored in
the owner's scope.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from altm.interfaces.cli import app, sample_path

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
OWNER = "acme/platform/dana/coder"


def _ingested(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    result = runner.invoke(app, ["ingest", "--data-dir", str(data), str(sample_path())], env=ENV)
    assert result.exit_code == 0, result.output
    return data


def test_erasing_a_session_of_another_scope_is_not_reported_as_done(tmp_path: Path) -> None:
    data = _ingested(tmp_path)
    result = runner.invoke(app, ["erase", "--data-dir", str(data), "--scope", "acme/platform/mallory/coder",
                                 "--session", "s1"], env=ENV)
    # the session is still there, in its owner's scope
    listing = runner.invoke(app, ["memories", "--data-dir", str(data), "--scope", OWNER, "--layer", "L0",
                                  "--json", "--limit", "1000"], env=ENV)
    assert any(m["session_id"] == "s1" for m in orjson.loads(listing.output))
    assert result.exit_code != 0, f"nothing was erased, yet: {result.output.strip().splitlines()[-1]!r}"


def test_erasing_a_mistyped_session_id_is_not_reported_as_done(tmp_path: Path) -> None:
    data = _ingested(tmp_path)
    result = runner.invoke(app, ["erase", "--data-dir", str(data), "--scope", OWNER, "--session", "S1"], env=ENV)
    assert result.exit_code != 0, f"nothing was erased, yet: {result.output.strip().splitlines()[-1]!r}"
