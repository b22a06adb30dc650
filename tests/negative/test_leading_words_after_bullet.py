"""A list item's sentence-opening word is kept in the name (red-team review of ``_opens_sentence``).

What a user expects: agents and users write lists ("- With Kafka we ship faster.", "* In hindsight Kafka was
right.", "1) With Kafka ..."). A list item opens a sentence as surely as a line does, so its capitalised first
word is sentence-initial, not part of a name: the entity is "Kafka", the same node as "With Kafka we cut
latency." in prose. Before the change (4fe78ba) ``_LEADING`` words were stripped from every run, and these gave
"Kafka"; now ``_opens_sentence`` only counts ``. ! ? : ;`` and a line break before the run (after stripping
spaces, quotes and brackets), so a bullet marker ("-", "*", "•", "1)") makes the run look mid-sentence and the
node is named "With Kafka" (and "* In hindsight Kafka was right." even yields an entity "In").
Suspected cause: altm/pipeline/processors/_rules.py ``_opens_sentence`` (``before[-1] in ".!?:;\\n"``: a list
marker at a line's start is not looked through).
Fix direction: strip a leading list marker (``-``, ``*``, ``•``, ``+``, ``\\d+[.)]``) at a line's start before
the test, or treat a line whose text before the run is only such a marker as opening a sentence."""

from __future__ import annotations

from altm.core.settings import Settings
from altm.pipeline.processors import _rules as rules
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import make_turn


def test_a_list_item_opens_a_sentence() -> None:
    assert rules.named_entities("With Kafka we ship faster.") == ["Kafka"]  # holds: a line's start
    assert rules.named_entities("- With Kafka we ship faster.") == ["Kafka"]  # actual: ['With Kafka']
    assert rules.named_entities("1) With Kafka we ship faster.") == ["Kafka"]  # actual: ['With Kafka']
    assert rules.named_entities("* In hindsight Kafka was right.") == ["Kafka"]  # actual: ['In', 'Kafka']


async def test_a_bulleted_mention_is_the_same_node(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, "With Kafka we cut the latency of the invoice exporter.", session="s1"),
             make_turn(2, "Notes from the review:\n- With Kafka we cut the latency of the exporter.", session="s2")]
    async with store_with(s, turns):
        names = {r["name"] for r in rows(s.data_dir, "SELECT name FROM graph_nodes WHERE node_type='Entity'")}
    assert "Kafka" in names, names
    assert "With Kafka" not in names, names  # actual: a second node 'With Kafka' for the same system
