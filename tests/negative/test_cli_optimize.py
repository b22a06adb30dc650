"""``altm optimize`` creates a vector index in a path that holds no data dir and reports success, and run while
an ingest (or ``altm serve``) holds the index it ends in a Python traceback.

Finding: ``optimize`` (altm/interfaces/cli/admin.py:146-157) calls ``open_vectors(settings, ...)`` for writing
without checking that ``--data-dir`` is a data dir (every other command refuses one without its log:
``_require_data_dir`` / ``_require_log``, see test_cli_missing_data_dir_writes.py) and outside ``run()``, the
one place that turns the known errors into a one-line message (altm/interfaces/cli/_common.py:69-74).
``EdgeVectorIndex.open`` (altm/vectors/edge.py:64-74) then

- on a mistyped path (``/srv/atlm`` for ``/srv/altm``) creates ``DIR/vectors/<collection>/`` (an empty
  Qdrant shard with its payload indexes) and prints "vector index optimised", exit 0: the operator believes
  the real index was optimised after a large ingest, and a stray data dir skeleton is left behind;
- beside a running pipeline (``altm ingest``/``altm serve`` hold the embedded index's lock) raises
  ``VectorIndexBusy``, a ``RuntimeError`` that no handler catches: the command dies with a traceback instead
  of the one-line error the read commands give for the same situation ("stop the pipeline first").

Reproduction: ``altm optimize --data-dir MISSING``; and ``altm optimize --data-dir DIR`` while an embedded
deployment of DIR is open.

Expected: on a path that holds no data dir, exit ≠ 0 with the "is not an ALTM data dir" message and nothing
created; while the index is held, exit ≠ 0 with one line saying the index is in use by a running process (no
traceback, no exception escaping the command).
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from altm.core import Settings
from altm.interfaces.cli import app
from tests.support.memories import embedded, runtime_of
from tests.support.turns import make_turn

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "local"}


def test_optimize_on_a_missing_data_dir_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    result = runner.invoke(app, ["optimize", "--data-dir", str(missing)], env=ENV)
    assert not missing.exists(), (f"optimize created {sorted(str(p.relative_to(missing)) for p in missing.iterdir())}"
                                  f"; output {result.output!r}")
    assert result.exit_code != 0, f"optimize on a missing data dir succeeded: {result.output!r}"
    assert "optimised" not in result.output


async def test_optimize_beside_a_running_pipeline_fails_in_one_line(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "local"})
    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "The staging cluster runs on Kubernetes 1.29 in Frankfurt.")])
        await rt.run_until_idle()
        result = runner.invoke(app, ["optimize", "--data-dir", str(s.data_dir)], env=ENV)
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"optimize ended in an uncaught {type(result.exception).__name__}: {result.exception}")
    assert "error:" in result.output
