"""An outage of the remote embedding endpoint makes every ``prepare_turn`` fail, though the word channels work.

Finding: with ``ALTM_EMBEDDING_LLM_*`` set, recall embeds the query with the remote model on its helper thread
(``Retriever._nearest``, altm/recall/retrieval/_engine.py:192-198, ``OpenAIEmbeddings.embed``,
altm/models/_openai.py:212-224, which turns any ``OpenAIError`` into ``Deferred``). ``Concurrent.result``
re-raises that error in ``_matching`` (_engine.py:154-166), nothing catches it, and ``search`` /
``prepare_turn`` fail as a whole: while the provider is down, rate-limits or times out, the agent gets no
memory at all — not even what the FTS, trigram and graph channels found in the shard, which needs no model.
Everywhere else the project degrades around a model that is away (the L1 compression falls back to the
extractive one, altm/app/_protocol.py:198-201; the embed stage defers and retries; a read-only command
recalls "without the vector channel" when the index is busy, README line 253), so a failed query embedding
taking recall down with it is a defect, not a policy.

Reproduction: a remote embedding model (the OpenAI double, 16 dims); store a message; stop the endpoint;
call ``prepare_turn`` (and ``search``) with a question that shares words with the message.

Expected: ``prepare_turn`` answers, its bundle holding the stored message found by the word channels (the
vector channel left out for that call, as when the index is busy), and ``search`` returns it as a hit.
"""

from __future__ import annotations

from contextlib import ExitStack

from altm.core import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.turns import SCOPE, make_turn

FACT = "The billing service stores invoices in the Postgres cluster called ledger-eu."


async def test_recall_answers_from_the_word_channels_while_the_embedding_endpoint_is_down(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    with ExitStack() as endpoint:
        api = endpoint.enter_context(openai_double(lambda _: 400))
        llm = {ModelTask.EMBEDDING: LLMSettings(base_url=api.base_url, model="embedder", dimensions=16,
                                                max_retries=0, timeout_s=2.0)}
        async with embedded(s, llm_settings=llm) as d:
            rt = runtime_of(d)
            assert d.vectors is not None
            await rt.publish([make_turn(1, FACT, session="s1")])
            await rt.run_until_idle()
            assert d.vectors.count() > 0  # embedded while the endpoint was up
            endpoint.close()  # the provider is down from here
            # the search's default preset admits other sessions' messages only through their capsules: asked in s1
            result = d.app.search(SCOPE, "s1", "which Postgres cluster stores billing invoices?")
            assert any("ledger-eu" in h.content for h in result.hits)
            prepared = await d.app.prepare_turn(SCOPE, "s1", "t9", "which Postgres cluster stores billing invoices?",
                                                800)
    assert "ledger-eu" in prepared.bundle.rendered
