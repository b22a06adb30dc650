"""``altm stats`` beside a running pipeline (``altm serve``: the normal case for an operator's stats) no longer gives
the vector freshness of an index it can read, and reports instead the *state hash's* refusal: "a pipeline runs on
the data dir: the state hash reads its shards one after another ... (a hash beside it mixes two states)".

Finding: commit 39447b2 pasted the state hash's refusal into ``vector_freshness`` as well (altm/wiring/__init__.py:
46-49): whenever a process holds the data dir's embedded log, it raises ``DataDirError`` before it looks at the
vector index at all. ``altm stats`` (altm/interfaces/cli/inspect.py:43-46) turns that into ``freshness_vector_l0 =
{"unavailable": "... the state hash reads its shards ..."}``. Vector freshness is no hash of the data dir: it needs
the index, and before this commit it was refused only when the index itself was held (``VectorIndexBusy``, the
embedded index's exclusive lock, altm/wiring/__init__.py:50-53). So: with a Qdrant server (``ALTM_VECTORS=http://``,
which the pipeline and ``altm stats`` can open side by side) the vector freshness disappears whenever the pipeline
runs, i.e. always in production; with no embedder (``ALTM_EMBEDDER=none``: no vector index) stats said ``null``
(there is no vector freshness) and now claims it is "unavailable" for a reason about state hashes. A dashboard that
reads ``freshness_vector_l0`` gets a wrong answer.

Reproduction: hold an embedded deployment with ``ALTM_EMBEDDER=none`` (as ``altm serve`` does) and run ``altm stats
--json --data-dir DIR``, or call ``altm.wiring.vector_freshness(DIR, settings)``.

Expected: ``vector_freshness`` refuses only when it cannot read the vector index (``VectorIndexBusy``, as before
39447b2); with no vector index it returns ``None`` whether or not a pipeline runs, and ``altm stats --json`` prints
``"freshness_vector_l0": null`` and never a message about the state hash.
"""

from __future__ import annotations

import orjson
from typer.testing import CliRunner

from altm.core import Settings
from altm.interfaces.cli import app
from altm.store import DataDirError
from altm.wiring import vector_freshness
from tests.support.memories import embedded, runtime_of
from tests.support.turns import make_turn

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}


async def test_stats_beside_a_running_pipeline_keeps_its_vector_freshness(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "The staging cluster runs on Kubernetes 1.29 in Frankfurt.")])
        await rt.run_until_idle()
        alone: object = None
        try:
            alone = vector_freshness(s.data_dir, s)
        except DataDirError as exc:  # what it raises is the finding
            alone = f"DataDirError: {exc}"
        result = runner.invoke(app, ["stats", "--json", "--data-dir", str(s.data_dir)], env=ENV)
    assert alone is None, f"vector_freshness with no vector index, beside a running pipeline: {alone}"
    assert result.exit_code == 0, result.output
    data = orjson.loads(result.output)
    assert data["freshness_vector_l0"] is None, (
        f"altm stats beside a running pipeline: freshness_vector_l0 = {data['freshness_vector_l0']!r}")
