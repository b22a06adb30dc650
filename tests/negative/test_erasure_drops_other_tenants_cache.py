"""One user's erasure deletes another tenant's model cache entries: the cache is keyed by user now, the erasure's
DELETE is not.

Finding: schema 22 (altm/store/sql/0022_llm_cache_by_home.sql, commit e1c4791) keys the model cache by
``(home, model, prompt_hash)``, so two users of one shard who send the same text each have an entry of their own
(the extraction prompt is the instructions and the message). An erasure picks the entries to drop among *its
user's* rows (``_TxErasure._drop_cached``, altm/store/_tx/_erasure.py:78-81: ``... FROM llm_cache WHERE
home=?``) but deletes them by model and prompt hash alone (altm/store/_tx/_erasure.py:86: ``DELETE FROM
llm_cache WHERE model=? AND prompt_hash=?``), which also deletes every other user's entry for the same prompt —
another tenant's, whose content was never erased. The audit row of the deletion (``entries: N`` under the
erasing user's home, line 84) counts only the erasing user's entries, so the other tenant's loss is not even
recorded. The cache is what makes a replay deterministic and free ("replays that reuse a shard answer from it
without calling the model", altm/store/_llm_cache.py): the other tenant's next replay asks the model again and may
derive different atoms, because a stranger on the same shard erased a session. The guard's vectors are kept in
the same table (``keep_cached``, sources unknown), so every erasure also drops every co-located user's vector of
any text the erasing user had judged.

Reproduction: a ``globex`` user on the same shard as ``acme/platform/dana`` says a sentence and dana says the same
sentence; both are extracted by the model (each user's prompt cached under its own home). Dana erases her session.
Read the shard's ``llm_cache`` rows.

Expected: dana's erasure removes dana's entries only; the globex user's entry for that prompt is still there
(the DELETE is keyed by home as well: ``WHERE home=? AND model=? AND prompt_hash=?``).
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

SAID = "Our quarterly planning review moves to the Lisbon office in May."


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
    return json.dumps({"atoms": [{"kind": "fact", "content": text, "subject": "planning"}]})


def _entries(settings: Settings, home: str) -> set[tuple[str, str]]:
    return {(str(r["model"]), str(r["prompt_hash"])) for r in rows(
        settings.data_dir, "SELECT model, prompt_hash FROM llm_cache WHERE home = ?", (home,))}


async def test_an_erasure_leaves_another_tenants_cache_entries(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    neighbour = _neighbour(s.partitions)
    with openai_double(_extractor) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, SAID, scope=neighbour, session="v1")])
            await rt.run_until_idle()
            await rt.publish([make_turn(2, SAID, session="s1")])  # dana says the same: her own entry
            await rt.run_until_idle()
            kept_before = _entries(s, neighbour.home)
            shared = kept_before & _entries(s, SCOPE.home)
            assert api.user_texts() == [SAID, SAID]  # each user's prompt went to the model once
            assert shared, "both users hold an entry for the same prompt"
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            kept_after = _entries(s, neighbour.home)
            danas_after = _entries(s, SCOPE.home)
    assert not (shared & danas_after), "dana's entries for her erased message went"
    # actual: the globex user's entry for the same prompt is gone too (deleted by model and prompt hash)
    assert kept_after == kept_before, (
        f"dana's erasure deleted {sorted(kept_before - kept_after)} of {neighbour.home}'s cache")
