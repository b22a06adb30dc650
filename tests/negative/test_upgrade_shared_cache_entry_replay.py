"""A replay after the upgrade asks the model again about messages the pre-upgrade cache answered, and a model that
answers differently today gives a user other memories than the deployment holds.

Finding: before schema 22 the model cache was keyed by model and prompt hash alone (``PRIMARY KEY (model,
prompt_hash)``, altm/store/sql/0001_init.sql:288-295), so when two users of a shard sent the same text, the
second user's message was answered from the first user's entry and no entry was made for the second user's home
(``INSERT OR IGNORE``). Migration 22 (altm/store/sql/0022_llm_cache_by_home.sql:12-13) copies each entry under the
one home it recorded, and lookups now need the asking user's home (``CACHE_GET``, altm/store/_sql.py:22;
``OpenAIChat.structured``, altm/models/_openai.py:143). The second user's atoms still say which answer they came
from (``memories.model`` and ``memories.prompt_hash``), but no entry is kept under that user's home. So a
re-derivation of the log (``altm replay --into``, whose README promise is "with the workers' LLM cache it makes no
model calls"; ``copy_llm_cache``, altm/wiring/_replay.py:124-129, copies the entries as they are) sends the
second user's message to the model, and whatever the model answers today (another model version, a
non-deterministic answer) replaces the answer the deployment's memories were made from: the replay no longer
rebuilds that user's memories, and the state hash no longer matches. With 6802e9a, the same replay makes no
model call.

Reproduction: 6802e9a with the OpenAI double as its L2 model: dana (acme) and a globex user whose home shares
dana's shard each say the same sentence (one model call; one entry, under dana's home). Today's code opens the
data dir (migrating it), then replays its log into a fresh dir while the double answers that prompt differently;
count the double's requests during the replay and compare the globex user's atoms in both dirs.

Expected: the replay asks the model nothing and the globex user's atoms are the same in both dirs (e.g. migration
22 also keeps the entry under the home of every user whose memories were made from it: the memories' ``model``
and ``prompt_hash`` name them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from altm.core import Scope, Settings
from altm.core.partitioner import partition_for
from altm.wiring import open_embedded, replay_into
from tests.support.old_release import run_old
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE

SAID = "We decided to keep PostgreSQL 15 for the billing service."
PARTITIONS = 4

_OLD = """
import asyncio, sys
from datetime import UTC, datetime
from pathlib import Path
from altm.core import Role, Scope, Settings, TurnEvent
from altm.wiring import open_embedded

async def main() -> None:
    s = Settings(data_dir=Path(sys.argv[1]), partitions=4, embedder="none", defer_backoff_s=0.0)
    at = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    turns = [TurnEvent(scope=Scope.parse(path), session_id=session, turn_id=f"{session}-t1", role=Role.USER,
                       content=sys.argv[2], timestamp=at)
             for path, session in (("acme/platform/dana/coder", "s1"), (sys.argv[3], "g1"))]
    async with open_embedded(s) as d:
        for turn in turns:  # dana first: the entry is made under her home
            await d.runtime.publish([turn])
            await d.runtime.run_until_idle()

asyncio.run(main())
"""


def _neighbour() -> Scope:
    """A user of another tenant whose memories share the shard of ``SCOPE``'s home."""
    for n in range(10_000):
        other = Scope.parse(f"globex/ops/user{n}/bot")
        if partition_for(other.home, PARTITIONS) == partition_for(SCOPE.home, PARTITIONS):
            return other
    raise AssertionError("no co-located user found")


class _Extractor:
    """The L2 model: its answer names the subject it is told to (a model updated since, or one that answers
    differently from one call to the next)."""

    def __init__(self) -> None:
        self.subject = "database"

    def __call__(self, body: dict[str, Any]) -> str | int:
        if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
            return 400
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return json.dumps({"atoms": [{"kind": "decision", "content": text, "subject": self.subject}]})


def _atoms(data: Path, scope: Scope) -> list[tuple[str, str]]:
    """The user's atoms: content and the subject the model answered (not the turn id only today's atoms carry)."""
    return sorted((str(r["content"]), str(r["subject"])) for r in rows(
        data, "SELECT content, json_extract(attributes, '$.subject') AS subject FROM memories WHERE layer = 'L2' "
        "AND tenant_id = ? AND user_id = ?", (scope.tenant_id, scope.user_id)))


async def test_a_replay_after_the_upgrade_answers_from_the_cache(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = tmp_path / "source", tmp_path / "replayed"
    other = _neighbour()
    model = _Extractor()
    with openai_double(model) as api:
        llm = {"ALTM_L2_LLM_BASE_URL": api.base_url, "ALTM_L2_LLM_MODEL": "extractor",
               "ALTM_L2_LLM_MAX_RETRIES": "0"}
        run_old(_OLD, str(source), SAID, other.path, env=llm)
        assert len(api.chat_requests) == 1  # the globex user's message was answered from dana's entry
        for name, value in llm.items():
            monkeypatch.setenv(name, value)
        s = Settings(data_dir=source, partitions=PARTITIONS, embedder="none", defer_backoff_s=0.0)
        async with open_embedded(s) as deployment:  # today's code opens it for writing: migrated to schema 22
            assert deployment.runtime is not None
            await deployment.runtime.run_until_idle()
        model.subject = "postgres version"  # what the model would answer today
        asked = len(api.chat_requests)
        await replay_into(source, target, settings=s)
        asked_in_replay = len(api.chat_requests) - asked
    assert _atoms(source, other), "the globex user has atoms in the source"
    # actual: 1 -- the globex user's message went to the model; its atom's subject is today's answer
    assert asked_in_replay == 0
    assert _atoms(target, other) == _atoms(source, other)
