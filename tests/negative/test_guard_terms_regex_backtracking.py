"""One turn with a long word holds the writer (every tenant of its partition) for seconds to minutes.

Finding: the writer's content terms (altm/pipeline/writer/_terms.py, used by the write guard for every derived
memory it checks against anti-patterns and tombstones) look for words with a letter outside ASCII with
``_ACCENTED = re.compile(r"\\w*[^\\x00-\\x7f]\\w*")`` (line 23), run by ``_words`` (line 119) over the whole text.
The pattern can start anywhere: in a word of n ASCII letters every position starts an attempt that runs ``\\w*`` to
the end of the word, finds no non-ASCII character and backtracks through it: O(n²) per call (16,000 letters: ~0.9 s;
64,000: ~15 s). ``terms`` is not cached and the guard calls it many times for one memory (the atom, its clauses, its
attribute values: 128 ``findall`` calls for the turn below, once the agent has an anti-pattern). So one user turn "I
prefer aaaa…a." (a preference atom quoting the sentence) holds the writer ~8 s at 16,000 letters, ~25 s at 32,000,
and minutes at the 64 KiB content limit. The writer applies every tenant's proposals of the partition, and in ``altm
serve`` it runs on the event loop that also answers HTTP: nothing of anyone is stored or answered meanwhile. Any
agent key can send such a turn through ``prepare_turn``.

Reproduction: an embedded store (no embedder) whose agent has one anti-pattern ("Don't use global mutable state
because it breaks the tests.": any agent may say one, and most long-lived agents have some); publish one user turn
``"I prefer " + "a" * 12_000 + "."`` and run the pipeline until idle.

Expected: computing a text's terms is linear in its length (e.g. ``(?<!\\w)\\w*[^\\x00-\\x7f]\\w*``, which starts
only at a word's start, or ``[w for w in re.findall(r"\\w+", plain) if not w.isascii()]``), and the guard does not
recompute the terms of the same text over and over; the turn is derived and stored in well under a second, as a turn
of 12,000 characters of prose is (~0.05 s). The bound below is 1.5 s.
"""

from __future__ import annotations

import time

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import make_turn

HISTORY = [make_turn(1, "Don't use global mutable state because it breaks the tests.", session="s0")]
"""An anti-pattern of the agent: the guard then checks each new atom's terms against it."""
BOUND_S = 1.5
"""Generous: the same turn with spaces between its letters goes through every stage in a fraction of this."""


async def test_a_long_word_in_a_preference_does_not_stall_the_writer(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, _app):
        started = time.perf_counter()
        await rt.publish([make_turn(1, "I prefer " + "a" * 12_000 + ".", session="s1")])
        await rt.run_until_idle()
        took = time.perf_counter() - started
    assert rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='preference'"), "no preference was derived"
    # actual: ~5 s, nearly all of it in _ACCENTED.findall (writer/_terms.py _words, called by the guard)
    assert took < BOUND_S, f"one 12,009-character turn held the writer's event loop {took:.1f} s"
