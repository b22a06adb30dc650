"""A capitalised function word at the start of a sentence becomes a graph entity, a hub and a scene anchor
(red-team review of the graph).

``_rules.named_entities`` promises "Capitalised names (not sentence-initial function words)", and ``link`` turns
each name into an Entity node (README: "names, identifiers and hosts, paths, systems named by a common noun,
dates"). But ``_COMMON_CAPS`` lists only some words: "In", "On", "For", "Once", "Every", "Both", "Some", "Did",
"Two" and "Last" (while "Next" is listed) pass as names, and a word run glues a function word to a real name
("With Kafka", "Last Carol"). So "In the morning I decided to call the bank about the mortgage." (s1) and "In
hindsight I decided to repaint the kitchen walls green." (s2) share the entity "In": govern writes an L3 scene
"Scene: In — 2 memories across sessions s1, s2", and ``emerge("mortgage bank")`` offers the kitchen repaint as
related to the mortgage through the node "In".
Expected: a sentence-initial function word is no entity, so unrelated memories are not linked through it and
no scene is anchored on it; a name after it keeps its own spelling ("Kafka", "Carol").
Suspected cause: ``altm/pipeline/processors/_rules.py`` ``_COMMON_CAPS`` (a short hand list) and
``named_entities`` (``_CAPS_RUN`` keeps any capitalised first word not in that list, and joins it to the name
after it)."""

from __future__ import annotations

import pytest

from altm.core import Settings
from altm.pipeline.processors._rules import named_entities
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

SAID = [("s1", "In the morning I decided to call the bank about the mortgage."),
        ("s2", "In hindsight I decided to repaint the kitchen walls green.")]


@pytest.mark.parametrize(("text", "names"), [
    ("In the morning the printer jammed.", []),
    ("On Monday the printer jammed.", []),
    ("For now the printer is fine.", []),
    ("Last week the printer jammed.", []),
    ("Every Sunday we call.", []),
    ("Two weeks ago it broke.", []),
    ("With Kafka down, nothing moves.", ["Kafka"]),
    ("Last Friday Carol left.", ["Carol"]),
])
def test_a_sentence_initial_function_word_is_no_name(text: str, names: list[str]) -> None:
    assert named_entities(text) == names  # actual: ['In'], ['On'], ['For'], ['Last'], ['Every'], ['Two'], …


async def test_unrelated_memories_share_no_node_and_no_scene(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for i, (session, text) in enumerate(SAID, 1):
            await say(rt, i, text, session)
        entities = [r["name"] for r in rows(s.data_dir, "SELECT name FROM graph_nodes WHERE node_type='Entity'")]
        scenes = [r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L3'")]
        emerged = [e.content for e in app.emerge(SCOPE, "mortgage bank")]
    assert entities == []  # actual: ['In']
    assert scenes == []  # actual: ['Scene: In — 2 memories across sessions s1, s2\n- [s1] decision: …']
    assert not [c for c in emerged if "kitchen" in c], emerged
