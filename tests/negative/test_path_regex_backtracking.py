"""One turn of dashes holds the pipeline (and, in ``altm serve``, the whole service) for seconds to minutes.

Finding: the rule extractor's path pattern ``_PATH`` (altm/pipeline/processors/_rules.py:40) backtracks
quadratically. Its second branch ``[\\w\\-]+(?:/[\\w.\\-]+)+\\.\\w{1,5}`` (and the third, ``[\\w\\-]+\\.(?:py|...)``)
may start at any position not preceded by ``[\\w@<]``; ``-`` is not in that class, so in a run of dashes (a
markdown rule, an ASCII table, ``"a-a-a-..."``) every position starts an attempt that runs ``[\\w\\-]+`` to the
end of the run and backtracks character by character looking for ``/`` or ``.``: O(n²). ``rules.paths`` runs it
over each message's whole content twice (``named_entities`` in the extract stage, _rules.py:242, and the
capsule sections in fold, altm/pipeline/processors/fold.py:123). 8,000 dashes cost ~2 s, 12,000 ~4 s, and a
turn at the 64 KiB content limit (``ALTM_MAX_CONTENT_BYTES``) about two minutes of CPU. The stages run on the
event loop (no thread), so in an embedded deployment (``altm serve``) no request of any tenant is answered
meanwhile, and on Kafka the worker's lane for the partition (every tenant hashed to it) stops; a handful of
such turns (any agent key may ``prepare_turn`` them) keep it stopped. Other patterns of the same module grow the
same way on ``"a-" * n`` (``_PATH`` again) and ``"A." * n`` (``_VERSIONED``, line 43).

Reproduction: an embedded store; publish one user turn of 12,000 ``-`` and run the pipeline until idle.

Expected: deriving a message is linear in its length (anchor the path branches so that an attempt cannot start
inside a run the previous attempt already scanned, e.g. a lookbehind ``(?<![\\w@<\\-])``, or find candidate tokens
with a linear ``[^\\s]+`` split first and match each token); the turn is derived in well under a second, as a
12,000-character turn of prose is (~0.05 s). The bound below is 1.5 s.
"""

from __future__ import annotations

import time

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import make_turn

BOUND_S = 1.5
"""Generous: a 12,000-character turn of prose goes through every stage in ~0.05 s on the same machine."""


async def test_a_turn_of_dashes_is_derived_in_linear_time(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, []) as (rt, _app):
        started = time.perf_counter()
        await rt.publish([make_turn(1, "-" * 12_000, session="s1")])
        await rt.run_until_idle()
        took = time.perf_counter() - started
    assert rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0'"), "the turn was not stored"
    # actual: ~4 s, all of it in _PATH.finditer (rules.paths, called by extract and by fold)
    assert took < BOUND_S, f"one 12,000-character turn held the pipeline's event loop {took:.1f} s"
