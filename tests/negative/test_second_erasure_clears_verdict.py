"""A second erasure that clears the verdict of the same kept memory is refused by the audit trigger.

f25c6aa makes ``_verdicts_kept`` call ``redact_audit_reasons``, which updates *every* audit row of the cleared
memory ``WHERE redacted IN (0, 2)`` to ``redacted = 2``. Migration 0019's insert-only trigger only lets a row
go 0 -> 1, 0 -> 2 or 2 -> 1: the 2 -> 2 update the second erasure makes aborts ("audit_log is insert-only").

"Our deploy day is Tuesday." (M). The user corrects it in session s2 ("Thursday"), then erases s2: M's verdict
is cleared, its audit rows become redacted = 2. Later they correct it again in s3 ("Correction: our deploy day is
Friday from now on.") and erase s3 too: the erasure aborts on M's already reason-redacted audit rows. The user's
right-to-erasure request fails: the "Friday" session and the atom derived from it stay stored and recalled.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "Our deploy day is Tuesday."


async def test_a_second_erasure_clearing_the_same_verdict_succeeds(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="s1")])
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "Actually, the deploy day is Thursday now.", session="s2")])
        await rt.run_until_idle()
        (m,) = rows(s.data_dir, "SELECT trust_status FROM memories WHERE layer='L2' AND content=?", (SAID,))
        assert m["trust_status"] == "contradicted", dict(m)
        await app.erase(SCOPE, "session", session_id="s2")  # M's verdict cleared, its audit rows redacted = 2
        await rt.run_until_idle()
        await rt.publish([make_turn(3, "Correction: our deploy day is Friday from now on.", session="s3")])
        await rt.run_until_idle()
        (m,) = rows(s.data_dir, "SELECT trust_status FROM memories WHERE layer='L2' AND content=?", (SAID,))
        assert m["trust_status"] == "contradicted", dict(m)  # named by the Friday atom again
        await app.erase(SCOPE, "session", session_id="s3")
        await rt.run_until_idle()
        friday = rows(s.data_dir, "SELECT memory_id, layer, content FROM memories WHERE content LIKE '%Friday%'")
        refused = rows(s.data_dir, "SELECT reason FROM rejections")
    assert friday == [], [dict(r) for r in friday]  # the erased session is gone
    assert refused == [], [dict(r) for r in refused]
