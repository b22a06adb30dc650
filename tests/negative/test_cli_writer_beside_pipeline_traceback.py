"""Every command that writes (``erase``, ``sweep``, ``retention``, ``ingest``, ``serve``) started while another
process runs the embedded pipeline on the same data dir (``altm serve``, ``altm mcp-server``, ``altm ingest``) dies
with a Python traceback ending in ``VectorIndexBusy``, instead of saying in one line that the data dir is in use.

Finding: ``open_deployment`` (altm/wiring/_deployment.py:233-237) opens the embedded vector index for the pipeline
*before* the log's writer lock is tried (``Deployment.start`` -> ``EmbeddedLog.start``, altm/bus/embedded/_log.py:
74-83, which has the one-line "open for writing by another process" message), and re-raises ``VectorIndexBusy``
when the pipeline needs the index. ``VectorIndexBusy`` is a bare ``RuntimeError`` subclass
(altm/vectors/_base.py:57-62) that is not in the CLI's ``KNOWN_ERRORS`` (altm/interfaces/cli/_common.py:39-40), so
``run`` (altm/interfaces/cli/_common.py:69-74) lets it escape: with the default embedder (``local``), an operator
who runs ``altm erase`` while ``altm serve`` is up gets a 60-line Rich traceback and exit 1, with no word that the
erasure was not applied or what to do (use the running server's ``/v1/erase``, or stop it). With
``ALTM_EMBEDDER=none`` the same commands answer in one line ("the embedded log ... is open for writing by another
process"), so the failure mode depends on an unrelated setting. ``altm serve`` / ``altm mcp-server`` started on a
data dir another pipeline holds crash the same way.

Reproduction: hold an embedded deployment of DIR open (as ``altm serve`` does), then run ``altm erase --data-dir
DIR --scope acme/platform/dana/coder --session s1`` (or ``altm sweep``, ``altm retention``, ``altm ingest FILE``,
``altm serve``) in another process, with the default embedder.

Expected: exit code != 0 and one ``error:`` line on stderr saying that another process runs the pipeline on the
data dir (e.g. the log's own message, checked before the vector index is opened, or ``VectorIndexBusy`` among the
known errors), no traceback and no exception escaping the command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.processes import free_port
from tests.support.turns import make_turn

SCOPE = "acme/platform/dana/coder"


def _altm(args: list[str], data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ALTM_EMBEDDER": "local"}  # the default, spelled out
    return subprocess.run([sys.executable, "-m", "altm", *args, "--data-dir", str(data_dir)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


async def test_writing_commands_beside_a_running_pipeline_fail_in_one_line(settings: Settings,
                                                                           tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "local"})
    more = tmp_path / "more.jsonl"
    more.write_text('{"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder", '
                    '"session_id": "s2", "turn_id": "s2-t1", "role": "user", "content": "We use Redis 7.", '
                    '"timestamp": "2026-11-02T09:00:00Z"}\n', encoding="utf-8")
    commands = [
        ["erase", "--scope", SCOPE, "--session", "s1"],
        ["sweep"],
        ["retention"],
        ["ingest", str(more)],
        ["serve", "--port", str(free_port())],
    ]
    async with embedded(s) as d:  # what `altm serve` holds while it runs
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "The staging cluster runs on Kubernetes 1.29 in Frankfurt.")])
        await rt.run_until_idle()
        results = {" ".join(c[:1]): _altm(c, s.data_dir) for c in commands}
    failures = []
    for name, r in results.items():
        if r.returncode == 0:
            failures.append(f"altm {name} succeeded beside a running pipeline: {r.stdout[-300:]!r}")
        elif "Traceback" in r.stderr or "VectorIndexBusy" in r.stderr or "error:" not in r.stderr:
            failures.append(f"altm {name} crashed instead of failing in one line: ...{r.stderr[-400:]!r}")
    assert not failures, "\n".join(failures)
