"""The text of an erased anti-pattern survives in the audit of a capsule a reviewer approved past it, and the
memory browser shows it.

"I decided to use pickle for the session cache." (session s1) is held for the anti-pattern said in s2 ("Never use
pickle for the session cache because unpickling untrusted data runs code."): the capsule's trust reason quotes the
anti-pattern ("... ('use pickle for the session cache': unpickling untrusted data runs code)"). A reviewer approves
the capsule; the user then erases s2. ``_verdicts_kept`` only redacts (since f25c6aa: only the trust reasons of)
the audit rows of memories whose *current* verdict names an erased memory; the approved capsule's verdict names
nothing, so the audit rows of its hold and of its approval keep the erased anti-pattern's words, and
``app.inspect`` on the capsule lists them in its audit diff. The erased session's content is readable after the
erasure. (Redacting those reasons also takes away what ``approved_holds`` reads an approval's coverage from:
see test_rt3_erased_anti_pattern_rehold.)
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED_WORDS = "unpickling untrusted data runs code"


async def test_an_erased_anti_patterns_words_leave_the_approved_capsules_audit(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, "I decided to use pickle for the session cache.", session="s1")])
        await rt.run_until_idle()
        await rt.publish([make_turn(2, f"Never use pickle for the session cache because {ERASED_WORDS}.",
                                    session="s2")])
        await rt.run_until_idle()
        (capsule,) = rows(s.data_dir, "SELECT memory_id, trust_status, trust_reason FROM memories "
                                      "WHERE kind='capsule' AND session_id='s1'")
        assert capsule["trust_status"] == "uncertain" and ERASED_WORDS in capsule["trust_reason"], dict(capsule)
        await app.review_decide(SCOPE, capsule["memory_id"], "approve", note="trusted data only")
        await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE ?", (f"%{ERASED_WORDS}%",))
        audit = rows(s.data_dir, "SELECT audit_id, target_id, action, actor, redacted FROM audit_log "
                                 "WHERE old_value LIKE ? OR new_value LIKE ?",
                     (f"%{ERASED_WORDS}%", f"%{ERASED_WORDS}%"))
        shown = [step for step in app.recall.inspect(SCOPE, capsule["memory_id"]).audit
                 if any(ERASED_WORDS in old or ERASED_WORDS in new for old, new in step.changed.values())]
    assert shown == [], shown
    assert audit == [], [dict(a) for a in audit]
