"""The change defers "a 200 ... that is not a ChatCompletion with text" (``_content``/``_answer`` in
altm/models/_openai.py). But the openai client builds a ChatCompletion from any JSON object without checking it,
and ``_content`` indexes ``choices`` and reads ``choices[0].message`` unguarded: a ``choices`` that is a list of
non-objects, a string, or an object makes ``structured`` raise AttributeError/KeyError, which the stage driver
dead-letters and ``_model_compressions`` lets fail prepare_turn (the round-14 defect, for these shapes)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from altm.core import Deferred, Scope
from altm.models import LLMSettings, MemoryLLMCache, ModelTask, OpenAIChat
from tests.negative.test_model_answer_malformed import endpoint

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
_COMPLETION = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}


class Answer(BaseModel):
    value: int


@pytest.mark.parametrize("choices", [[42], ["text"], "abc", {"0": {"message": {"content": "{}"}}}])
async def test_a_completion_whose_choices_are_not_choices_is_deferred(choices: object) -> None:
    body = json.dumps({**_COMPLETION, "choices": choices}).encode()
    with endpoint("application/json", body) as (ep,):
        chat = OpenAIChat(lambda scope: MemoryLLMCache(),
                          {ModelTask.L2: LLMSettings(base_url=ep["base_url"], model="m", max_retries=0)})
        try:
            with pytest.raises(Deferred):
                await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "a"}], Answer)
        finally:
            await chat.aclose()
