"""A short erased correction said again after the erasure comes back as an atom and a capsule line.

"Actually, the launch deadline is Friday." (s2) is erased with its session. Said again word for word in s3, the
raw message is stored, as designed: it is short and names nothing specific (three word pairs), so its re-send
is "a new message" (README: only a *distinctive* erased text is refused at L0). But what is derived from it is
stored too: a fact atom "Actually, the launch deadline is Friday." (verified, as a correction) and the s3
capsule's "Corrections: Actually, the launch deadline is Friday.", although the guard's own rule names it a
re-statement (all four canonical terms shared).

Cause: ``guard._live_copies`` exempts a derived memory whose cited raw message has the erased text's value hash,
meant for a copy "said before the erasure, in another session" (README: "a derived memory is not refused for an
erased message whose very text a live message of the same user that it cites repeats (said before the erasure,
in another session; a restatement after it is still refused)"). It never checks when the copy was said, and a
non-distinctive re-send after the erasure is exactly such a live copy, so the restatement after it is not
refused.

Expected, as README states: a re-statement made after the erasure forms no derived memory; the L0 message stays.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

ERASED = "Actually, the launch deadline is Friday."


async def test_an_erased_correction_said_again_forms_no_derived_memory(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "The launch deadline is Thursday.", "s1")
        await say(rt, 2, ERASED, "s2")
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        await say(rt, 3, ERASED, "s3")  # the same words, after the erasure
        raw = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0' AND session_id='s3'")
        derived = rows(s.data_dir, "SELECT layer, content FROM memories WHERE layer!='L0' AND content LIKE ?",
                       (f"%{ERASED}%",))
    assert [r["content"] for r in raw] == [ERASED]  # a new message: kept, as designed
    assert derived == [], derived
