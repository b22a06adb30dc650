"""Finding: a long retention (``ALTM_RETENTION_DAYS_L0=1000000``, about 2,700 years: "keep it, practically for
ever") or ``inf`` is accepted by Settings and then crashes ``altm retention`` (and its ``--preview``) with an
OverflowError traceback.

``Settings.retention_days_l0..l4`` (altm/core/settings.py:36-40) are ``float | None`` with ``gt=0`` only, so
``inf`` and any huge value pass. ``AdminService.retention_candidates`` (altm/app/_admin.py:145-146) computes the
cut-off as ``now - timedelta(days=days)``: ``timedelta`` raises ``OverflowError`` for ``inf`` ("cannot convert float
infinity to integer") and for more than 999,999,999 days, and the subtraction raises it ("date value out of
range") for anything reaching before year 1 (about 739,000 days from 2026). OverflowError is not among the CLI's
``KNOWN_ERRORS`` (altm/interfaces/cli/_common.py:39), so the operator gets a traceback and exit code 1, and no
retention pass runs for any layer — not even those whose setting was fine.

Reproduction: a data dir with one stored turn; ``altm retention --preview --data-dir DIR`` with
``ALTM_RETENTION_DAYS_L0=1000000`` (or ``inf``).

Expected: a retention longer than the time since year 1 means nothing is past it: the preview exits 0 and says
"0 memories past retention" (and the pass forgets nothing). A value that is not a finite number of days (``inf``)
is either treated the same way or refused when settings are read, with a message that names
``retention_days_l0`` — never an OverflowError from deep inside the pass.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from altm.core import Settings
from altm.interfaces.cli import app
from tests.support.memories import store_with
from tests.support.turns import make_turn

runner = CliRunner()


async def _store(data_dir: Path) -> None:
    async with store_with(Settings(data_dir=data_dir, embedder="none"),
                          [make_turn(1, "We deploy the billing service on Tuesdays.")]):
        pass


@pytest.mark.parametrize("days", ["1000000", "5000000000"])
def test_a_very_long_retention_forgets_nothing(tmp_path: Path, days: str) -> None:
    asyncio.run(_store(tmp_path))
    env = {"ALTM_EMBEDDER": "none", "ALTM_RETENTION_DAYS_L0": days}
    for args in (["retention", "--preview"], ["retention"]):
        result = runner.invoke(app, [*args, "--data-dir", str(tmp_path)], env=env)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"`altm {' '.join(args)}` with ALTM_RETENTION_DAYS_L0={days} crashed: {result.exception!r}")
        assert result.exit_code == 0, result.output
    preview = runner.invoke(app, ["retention", "--preview", "--data-dir", str(tmp_path)], env=env)
    assert "0 memories past retention" in preview.output, preview.output


def test_an_infinite_retention_is_refused_by_name_or_forgets_nothing(tmp_path: Path) -> None:
    try:
        Settings(retention_days_l0=float("inf"))
    except ValidationError as exc:
        assert "retention_days_l0" in str(exc)
        return
    asyncio.run(_store(tmp_path))
    result = runner.invoke(app, ["retention", "--preview", "--data-dir", str(tmp_path)],
                           env={"ALTM_EMBEDDER": "none", "ALTM_RETENTION_DAYS_L0": "inf"})
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"ALTM_RETENTION_DAYS_L0=inf was accepted and `altm retention --preview` crashed: {result.exception!r}")
    assert result.exit_code == 0 and "0 memories past retention" in result.output, result.output
