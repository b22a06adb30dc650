"""Data dirs written by an earlier ALTM, for upgrade tests: the ``altm`` package of an earlier commit, taken
from this repository's history (``git archive``), run in a child process on a data dir that the test then opens
with today's code."""

from __future__ import annotations

import atexit
import functools
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCHEMA_20 = "6802e9a3bdf3c12d8b2c3f60134433708bc11bf0"
"""main before shard schemas 21 (the text index queue) and 22 (the model cache keyed by home)."""


@functools.cache
def old_release(commit: str = SCHEMA_20) -> Path:
    """A folder holding the ``altm`` package as it was at ``commit`` (once per process)."""
    found = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit, "altm"],
                           capture_output=True, check=False)
    if found.returncode != 0 and _shallow():
        pytest.skip(f"a shallow clone holds no commit {commit[:7]} to make an old data dir with (clone it whole)")
    assert found.returncode == 0, f"commit {commit} is not in this checkout's history: {found.stderr.decode()}"
    root = Path(tempfile.mkdtemp(prefix=f"altm-{commit[:7]}-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(found.stdout)) as archive:
        archive.extractall(root, filter="data")
    return root


def _shallow() -> bool:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() == "true"


def run_old(script: str, *args: str, commit: str = SCHEMA_20, env: dict[str, str] | None = None) -> str:
    """Run ``script`` (Python source) with the ``altm`` of ``commit`` and no ``ALTM_*`` setting from the test's
    environment; returns its stdout. Fails the test with the child's output when it fails."""
    release = old_release(commit)
    preamble = (f"import altm\nassert altm.__file__.startswith({str(release)!r}), altm.__file__  # not today's\n")
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("ALTM_", "PYTHON"))}
    child_env.update({"PYTHONPATH": str(release), **(env or {})})
    done = subprocess.run([sys.executable, "-c", preamble + script, *args], cwd=release, env=child_env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"the {commit[:7]} child failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
