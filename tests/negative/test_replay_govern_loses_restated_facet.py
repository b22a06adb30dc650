"""A replay with a governance model loses the user's persona facet when one of several identical statements was
erased by its id (the first of two, or the middle one of three): the source keeps "Preference (indentation): I
like tabs for indentation.", the replay has no L4 facet at all. Without a governance model the same replays are
faithful.

Finding: with a chat model configured, ``GovernProcessor._atom`` (altm/pipeline/processors/govern.py:139-142)
returns no proposal at all for an atom whose erasure (or whose message's erasure) a replay carries pending, and
``_facet`` (govern.py:185-186, the third round's 3fcf04a) leaves such atoms out of the facet's versions. The
erased message's atom A1 therefore makes neither merges nor a facet in the replay, but it is still stored, and
``_merge_duplicates`` (govern.py:160-172) takes it as the canonical atom of the second, identical statement A2:
A2 is folded into the pending A1 ("a duplicate adds evidence to its canonical atom, not a facet of its own",
govern.py:145-146), so A2 makes no facet either. When the replay reaches the erasure, A1 goes and A2 is
released, but a released atom only recomputes merges (``_released_atom``, govern.py:125-126), never its facet.
In the source the facet was made from A1 before the erasure and, A1 erased, stands on the atom left. (Erasing
the middle statement of three: the source's erasure takes the canonical s1 atom too, its merged evidence
named the erased message, and keeps s3's; the replay carries the s1 atom's tombstone pending as well, so none
of the three atoms makes a facet.) The replay (a rebuild, an upgrade, a standby) silently lacks a current
persona facet the user stated again and never erased.

Reproduction: a governance model (the OpenAI double); s1 and s2 both say "I like tabs for indentation." and
the s1 message is erased by its memory id (or s1, s2 and s3 say it and the s2 message is erased);
``replay_into`` a fresh data dir with the same governance model configured.

Expected: the replay holds the same memories as the source: the L4 facet "Preference (indentation): I like tabs
for indentation." stands on an atom that is left (every state table equal, as ``tests/support/replay.py``
checks for other replays). E.g. ``_merge_duplicates`` takes no canonical whose erasure is pending (the
earliest atom that stays), or an atom released by an erasure gets its facet computed as a new atom does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from altm.core import Settings
from altm.models import LLMSettings, ModelTask
from altm.wiring import replay_into
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.replay import assert_same_state
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID_TWICE = "I like tabs for indentation."
FACET = "Preference (indentation): I like tabs for indentation."


def _answer(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "SupersedeRubric":
        return 400
    return json.dumps({"supersede": True, "confidence": 0.9, "reason": "the value changed"})


def _facets(data_dir: Path) -> list[str]:
    return sorted(str(r["content"]) for r in rows(data_dir, "SELECT content FROM memories WHERE layer='L4'"))


@pytest.mark.parametrize(("sessions", "erased"), [(("s1", "s2"), "s1"), (("s1", "s2", "s3"), "s2")],
                         ids=["first-of-two", "middle-of-three"])
async def test_a_replay_keeps_the_facet_of_a_statement_said_again(settings: Settings, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  sessions: tuple[str, ...], erased: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0, "retired_key_grace_s": 0.0})
    target = tmp_path / "replayed"
    with openai_double(_answer) as api:
        llm = {ModelTask.GOVERNANCE: LLMSettings(base_url=api.base_url, model="governor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            for i, session in enumerate(sessions, 1):
                await rt.publish([make_turn(i, SAID_TWICE, session=session)])
                await rt.run_until_idle()
            (message,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND session_id=?",
                                (erased,))
            await app.erase(SCOPE, "memory", memory_id=str(message["memory_id"]))
            await rt.run_until_idle()
        assert _facets(s.data_dir) == [FACET]  # the source: the facet stands on a statement left
        for name, value in {"ALTM_GOVERNANCE_LLM_BASE_URL": api.base_url, "ALTM_GOVERNANCE_LLM_MODEL": "governor",
                            "ALTM_GOVERNANCE_LLM_MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(name, value)
        await replay_into(s.data_dir, target, settings=s)
    assert _facets(target) == [FACET], "the replay lost the persona facet the source keeps"
    assert_same_state(s.data_dir, target, "after the replay")
