"""A turn the configured content limit accepts is refused by prepare_turn as an over-long *query* (red-team
review of ``MAX_QUERY_CHARS``).

What a user expects: ``ALTM_MAX_CONTENT_BYTES`` is the "Largest accepted message content" (altm/core/settings.py)
and may be raised (default 64 KiB). ``MAX_QUERY_CHARS`` (65,536) was sized on the assumption that the default
holds ("a turn is the longest query prepare_turn makes", altm/app/_recall.py). With the limit raised to 256 KiB,
a 100,000-character turn passes ``_check_content`` and then ``prepare_turn`` fails inside recall with
"a query of 100000 characters is over the limit of 65536": the operator's setting accepts the turn, the
protocol refuses it (HTTP: 422 with a message about a query the caller never sent). Either the turn is
refused for its size, in the words of the content limit, or it is prepared (the query cut or bounded).
Suspected cause: altm/app/_recall.py ``RecallService.search`` (``len(text) > MAX_QUERY_CHARS`` raises), called
with the whole turn by altm/app/_protocol.py ``prepare_turn`` (line ~177).
Fix direction: recall from a bounded prefix of the turn in ``prepare_turn`` (or size the limit from
``max_content_bytes``)."""

from __future__ import annotations

from altm.app import MAX_QUERY_CHARS
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


async def test_a_turn_within_the_content_limit_is_prepared(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "max_content_bytes": 256 * 1024})
    content = ("the invoice exporter log line " * 4000)[:100_000]
    assert len(content.encode()) <= s.max_content_bytes and len(content) > MAX_QUERY_CHARS
    async with store_with(s, [make_turn(1, "The billing deadline is December 15.", session="s1")]) as (_, app):
        # actual: ValueError "a query of 100000 characters is over the limit of 65536"
        prepared = await app.prepare_turn(SCOPE, "s2", "t-long", content, 2000)
    assert prepared.cycle_id
