"""An erased memory's embedding stays in the embedded vector index's files after the erasure.

Finding: the embed stage removes an erased memory's point with ``EdgeVectorIndex.delete``
(altm/pipeline/processors/embed.py:160 and :168 → altm/vectors/edge.py:142-144), which is Qdrant's
``delete_points``: the point is only marked deleted in its segment's id tracker, while its vector stays in
the segment's memory-mapped vector storage (``segments/*/vector_storage/vectors/chunk_0.mmap``), byte for
byte (float16), for as long as the segment lives. Nothing ever rewrites it: the index has no write-ahead log
to truncate, ``flush`` only persists, and ``altm optimize`` (``EdgeShard.optimize``) leaves a small segment
with deleted points as it is (measured: the deleted vector is still there after ``optimize``). So after
``altm erase``, anyone with a copy of the data dir reads the erased message's sentence embedding (and those
of its capsule and atom) straight out of the file; an embedding is a fingerprint of the text — it confirms a
guessed sentence by cosine 1.0 and can be inverted to approximate text. README ("Erasure", line ~470)
promises the writer removes the content "and everything derived from it from the shard, both FTS indexes,
the vector index, ..."; the byte-level probe (tests/negative/test_erasure_bytes.py) only looks for the
text, not for the vector.

Reproduction: with the local embedder, store a session holding a secret and an unrelated one; read the
stored points (vector bytes as float16) of every memory of the secret session; erase the session; close
the deployment; search every file of the data dir for those bytes.

Expected: once the erasure is applied (and the index flushed), no file of the data dir holds the vector of
an erased memory, as none holds its text; e.g. the embed stage overwrites an erased point's vector in place
(upsert of a constant vector under the same id, measured to remove the bytes from an appendable segment)
before deleting it, and vacuums segments that held erased points (``EdgeOptimizersConfig`` with
``deleted_threshold=0`` / ``vacuum_min_vector_number`` low, then ``optimize``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TURNS = [make_turn(1, "My vault code is ZEBRA-4471-SECRET, keep it safe.", session="s-secret"),
         make_turn(2, "Unrelated: the billing deadline is March 3.", session="s1")]


def _holding(data_dir: Path, probes: dict[str, bytes]) -> dict[str, list[str]]:
    """Memory id → the files of the data dir that hold its vector's bytes."""
    blobs = {str(p.relative_to(data_dir)): p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file()}
    return {mid: found for mid, probe in probes.items()
            if (found := [name for name, data in blobs.items() if probe in data])}


async def test_no_file_of_the_data_dir_holds_an_erased_memory_s_vector(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "local"})
    async with embedded(s) as d:
        rt, vectors = runtime_of(d), d.vectors
        assert vectors is not None
        await rt.publish(TURNS)
        await rt.run_until_idle()
        erased = [r["memory_id"] for r in rows(s.data_dir, "SELECT memory_id FROM memories WHERE session_id = ?",
                                                 ("s-secret",))]
        points = vectors.points(erased)
        assert erased and set(points) == set(erased)
        probes = {mid: np.asarray(p.vector, dtype=np.float16).tobytes() for mid, p in points.items()}
        vectors.flush()
        assert set(_holding(s.data_dir, probes)) == set(erased)  # the probe sees them while they are stored

        await d.app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        assert not set(erased) & set(vectors.ids())  # the points are gone from the index's view
    assert _holding(s.data_dir, probes) == {}
