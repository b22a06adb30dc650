"""Finding: ``ALTM_RETIRED_KEY_GRACE_S=inf`` (or any grace of about 9.2e15 s or more) is accepted by Settings and
then crashes the embedded pipeline at its first step, before a single turn is stored.

``Settings.retired_key_grace_s`` (altm/core/settings.py:58-62) is a float with ``ge=0`` only: ``inf`` passes.
The writer's stage calls ``destroy_retired_keys`` on every step (``WriterDriver.retry_due``,
altm/pipeline/_drivers.py:654), which the first time calls ``SqliteKeyStore.destroy_retired(grace)``
(altm/pipeline/writer/_apply.py:319); that computes ``int(older_than_s * 1000)`` (altm/bus/sealing/_keys.py:321):
``OverflowError: cannot convert float infinity to integer`` for ``inf``, and for a finite grace over ~9.2e15 s the
cut-off no longer fits SQLite's INTEGER (``OverflowError: Python int too large to convert to SQLite INTEGER``).
The exception leaves ``run_until_idle`` (and the background runtime of ``altm serve``): nothing the host sends is
ever stored. The Kafka key store has the same ``int(older_than_s * 1000)`` (altm/bus/kafka/_keys.py:460).

Reproduction: an embedded deployment with ``Settings(retired_key_grace_s=float("inf"))``; publish one turn; run the
runtime until idle.

Expected: either Settings refuses a grace that is not a finite number of seconds, naming
``retired_key_grace_s`` (so the process does not start), or the pipeline treats it as "retired keys are never
destroyed" and works: the turn is stored and recallable, and an erasure still shreds the erased session's own
keys.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


@pytest.mark.parametrize("grace", [float("inf"), 1e17])
async def test_a_huge_key_grace_is_refused_by_name_or_the_pipeline_runs(tmp_path: Path, grace: float) -> None:
    try:
        settings = Settings(data_dir=tmp_path, embedder="none", retired_key_grace_s=grace)
    except ValidationError as exc:
        assert "retired_key_grace_s" in str(exc)
        return
    try:
        async with store_with(settings, [make_turn(1, "We deploy the billing service on Tuesdays.")]) as (rt, app):
            assert app.list_memories(SCOPE), "the turn was not stored"
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            assert not app.list_memories(SCOPE), "the erased session's memories are still listed"
    except OverflowError as exc:
        pytest.fail(f"ALTM_RETIRED_KEY_GRACE_S={grace} was accepted, then the pipeline crashed: {exc!r}")
