"""A message naming a URL or path longer than 512 characters gets no graph at all, and is dead-lettered as an
internal error of ``link`` (red-team review of the graph).

A presigned object-store URL is often 600-1,500 characters. ``_rules.paths`` takes a URL whole (``https?://`` up
to the next space), ``link`` makes it an Entity node, and ``GraphNode.name`` holds at most 512 characters: the
pydantic error escapes ``LinkProcessor.process``, the driver dead-letters the change ("internal error in link:
ValidationError"), and nothing of the message is linked: "Alice Cooper" and "the billing dashboard", which it
also names, get no node, no MENTIONS edge, no scene. ``link`` bounds what a hostile memory can make it propose
(``_MAX_NODES``, ``_MAX_LINK_BYTES``: "its surplus entities are not linked"), but not one name's length.
Expected: an ordinary message with a long URL is linked like any other (its long name cut to the node's bound or
left out, the other names linked), and no dead letter is written.
Suspected cause: ``altm/pipeline/processors/link.py`` ``_links`` (``GraphNode(... name=name ...)`` with no
bound on ``name``; the model path's names are bounded to 200 by ``ExtractedEntity``, the rules' are not) and
``_rules.paths`` / ``_URL``, ``_PATH``, ``_CAPS_RUN`` (unbounded matches)."""

from __future__ import annotations

from altm.core import Settings, decode_dead_letter
from tests.support.memories import running
from tests.support.rows import rows
from tests.support.turns import make_turn

URL = "https://files.example.com/exports/report.csv?X-Amz-Signature=" + "a1b2c3d4" * 70  # 600+ characters
TEXT = f"Alice Cooper put the billing dashboard export at {URL} for the audit."


async def test_a_message_with_a_long_url_is_still_linked(settings: Settings) -> None:
    assert len(URL) > 512
    s = settings.model_copy(update={"embedder": "none"})
    async with running(s) as rt:
        await rt.publish([make_turn(1, TEXT)])
        await rt.run_until_idle()
        dead = [decode_dead_letter(r.value) for r in await rt.log.read_all(["altm.dlq"])]
    names = {r["name"] for r in rows(s.data_dir, "SELECT name FROM graph_nodes")}
    # actual: one dead letter, stage 'link', "internal error in link: ValidationError: … at most 512 characters"
    assert [(d.stage, d.error[:40]) for d in dead] == []
    assert {"Alice Cooper", "billing dashboard"} <= names  # actual: no node at all
