"""``UNREADABLE = (ValueError, TypeError, AttributeError)`` (altm/models/_attempts.py) is caught around the whole
``create(...)`` call (``_completion`` and ``OpenAIEmbeddings.embed/aembed`` in altm/models/_openai.py), not around
reading a 200's body. An error raised before anything is sent - here an API key with a non-ASCII character (a
curly quote pasted in), which the HTTP layer refuses to put in a header (UnicodeEncodeError, a ValueError) - is
reported as "the endpoint's answer could not be read", counted ``invalid``, charged the prompt's tokens against the
budget, and deferred: every deferred retry fails the same way and eats the budget, and nothing says the
configuration is wrong. Before the change it surfaced as the error it is."""

from __future__ import annotations

from pydantic import BaseModel

from altm.core import Deferred, Scope
from altm.models import LLMSettings, MemoryLLMCache, ModelTask, OpenAIChat
from tests.support.openai_double import openai_double

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")


class Answer(BaseModel):
    value: int


def _never(body: dict[str, object]) -> str:
    raise AssertionError("nothing should reach the endpoint")


async def test_a_request_never_sent_is_not_an_unreadable_answer_nor_charged() -> None:
    with openai_double(_never) as api:
        chat = OpenAIChat(lambda scope: MemoryLLMCache(), {ModelTask.L2: LLMSettings(
            base_url=api.base_url, model="m", api_key="sk-abc\u2019def", max_retries=0, token_budget=1000)})
        raised: BaseException | None = None
        try:
            await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "x" * 800}], Answer)
        except BaseException as exc:
            raised = exc
        finally:
            await chat.aclose()
    assert api.chat_requests == []
    assert chat.usage()["L2"]["tokens"] == 0, f"charged {chat.usage()['L2']['tokens']} tokens for a request never sent"
    assert not isinstance(raised, Deferred), f"a configuration error was deferred as a bad answer: {raised}"
