"""A mistyped ``--data-dir`` given to a command that changes memory, or to a ``--preview``, creates a fresh,
empty data dir and reports success.

What a user expects: the reading commands already refuse a path that holds no data dir ("… is not an ALTM
data dir (no log.db); run `altm ingest` first"). An operator who runs ``altm erase --data-dir /srv/atlm ...``
(typo for ``/srv/altm``) expects the same refusal, exit code ≠ 0, and nothing created — not "erased
(session)" with exit 0 while the real data dir still holds the content (a false confirmation of an
erasure). ``--preview`` promises "change nothing", yet ``altm retention --preview`` on a missing path
creates ``log.db``, ``keys.db``, a master key file and ``shards/``.

Actual: ``erase``/``retention --preview``/``governance preview``/``governance rollback`` open the deployment
for writing (``deployment_for`` → ``open_deployment``), which creates the data dir; erase exits 0 and prints
"erased (session); 0 tombstones".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
SCOPE = "acme/platform/dana/coder"


def test_erase_on_a_missing_data_dir_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    result = runner.invoke(app, ["erase", "--data-dir", str(missing), "--scope", SCOPE, "--session", "s1"], env=ENV)
    assert result.exit_code != 0, f"erase on a missing data dir succeeded: {result.output!r}"
    assert "erased" not in result.output
    assert not missing.exists(), f"erase created {sorted(p.name for p in missing.iterdir())}"


@pytest.mark.parametrize("args", [
    ["retention", "--preview"],
    ["compaction", "--preview"],
    ["governance", "preview"],
])
def test_a_preview_on_a_missing_data_dir_writes_nothing(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "typo"
    result = runner.invoke(app, [*args, "--data-dir", str(missing)], env=ENV)
    assert not missing.exists(), (f"{' '.join(args)} created {sorted(p.name for p in missing.iterdir())}; "
                                  f"output {result.output!r}")
    assert result.exit_code != 0


def test_rollback_on_a_missing_data_dir_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    result = runner.invoke(app, ["governance", "rollback", "dec_x", "--data-dir", str(missing), "--scope", SCOPE],
                           env=ENV)
    assert result.exit_code != 0
    assert not missing.exists(), f"rollback created {sorted(p.name for p in missing.iterdir())}"
