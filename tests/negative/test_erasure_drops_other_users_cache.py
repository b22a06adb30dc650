"""An erasure of one user deletes another user's model cache entries: every entry of the shard with the same
model and prompt hash goes, whoever's it is.

Finding: schema 22 keys the shard's model cache by the user whose prompt it is (``PRIMARY KEY (home, model,
prompt_hash)``, altm/store/sql/0022_llm_cache_by_home.sql:4-11; ``CACHE_GET``, altm/store/_sql.py:22), so two users
of a shard who send the same text now each have an entry under the same (model, prompt hash). The erasure's
cache scrub still deletes by the old key: ``_drop_cached`` picks the erased user's entries (``WHERE home=?``) and
then runs ``DELETE FROM llm_cache WHERE model=? AND prompt_hash=?`` (altm/store/_tx/_erasure.py:86), which
deletes the other users' entries for that prompt too. Its audit row counts only the erased user's entries
(``old={"entries": len(doomed)}``, line 84-85), so nothing records the others' loss. The other user's extraction
is no longer cached: a replay with ``--cache-from`` (README, Re-derivation: "with the workers' LLM cache it makes
no model calls") or a re-derivation sends that user's message to the model again, and a model that answers
differently gives that user other memories than the source; the user's next identical message is a model call
again, which the model-call metrics show (the erasure of someone else's identical text is observable).

Reproduction: a model-path deployment (the OpenAI double for L2); two users of one shard (tenants acme and
globex) say the same sentence, each gets a cache entry; erase the globex user's session; read the shard's
``llm_cache`` rows of dana (acme).

Expected: dana's entry is still there (the erasure deletes ``WHERE home=? AND model=? AND prompt_hash=?``, the
table's key), and the erased user's entry is gone.
"""

from __future__ import annotations

import json
from typing import Any

from altm.core import Scope, Settings
from altm.core.partitioner import partition_for
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "We decided to keep PostgreSQL 15 for the billing service."


def _neighbour(partitions: int) -> Scope:
    """A user of another tenant whose memories share the shard of ``SCOPE``'s home."""
    for n in range(10_000):
        other = Scope.parse(f"globex/ops/user{n}/bot")
        if partition_for(other.home, partitions) == partition_for(SCOPE.home, partitions):
            return other
    raise AssertionError("no co-located user found")


def _extractor(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return json.dumps({"atoms": [{"kind": "decision", "content": text, "subject": "database"}]})


def _cached_homes(settings: Settings) -> list[str]:
    return sorted(str(r["home"]) for r in rows(settings.data_dir, "SELECT home FROM llm_cache WHERE model = ?",
                                               ("extractor",)))


async def test_erasing_one_user_keeps_another_users_cache_entry(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    other = _neighbour(s.partitions)
    with openai_double(_extractor) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt = runtime_of(deployment)
            await rt.publish([make_turn(1, SAID, session="s1"), make_turn(1, SAID, scope=other, session="g1")])
            await rt.run_until_idle()
            before = _cached_homes(s)
            await deployment.app.erase(other, "session", session_id="g1")
            await rt.run_until_idle()
            after = _cached_homes(s)
    assert before == sorted([SCOPE.home, other.home]), before
    # actual: [] -- the erasure of the globex user's session deleted dana's entry for the same prompt too
    assert after == [SCOPE.home]
