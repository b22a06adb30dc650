"""Erased content comes back in the header of a scene anchored on an entity a graph model named.

Finding: on the model path, ``LinkProcessor._model_entities`` (altm/pipeline/processors/link.py:85-95) takes the
GRAPH model's entity names (up to 200 characters each) as they come: nothing requires them to be words of the
memory being linked, and ``_links`` (link.py:137-172) makes each a graph node that the memory MENTIONS. The
writer's ``link_memory`` (altm/pipeline/writer/ops/graph.py:34-50) never asks the write guard about a node
(``_attributes_erased``, guard.py:355-365, was added for the free text of a model's *atoms*, not for its graph
answers). Once atoms of two sessions mention such a node, govern writes an L3 scene whose header is the node's
name ("Scene: <name> — 2 memories across sessions …", ``GovernProcessor._scene``, govern.py:229-256, and
altm/core/scene.py:25-28). The guard judges a scene whose members can be told apart a member line at a time
(``WriteGuard._statements``, guard.py:402-430: ``scene.members`` leaves the header out) and compares the whole
text only for a near-quote (shingles), so the header is never judged for a re-statement in other words. After
"My sister Maya is moving to Leeds for a nursing job in the spring." is erased, the user's later mentions are
kept as raw messages (as the README says), their model atoms are bland (an atom restating it would be
refused), and yet a live L3 memory, "Scene: Maya's nursing job in Leeds — …", says the erased message again
(its name and two more of its terms: what ``restates_terms`` refuses in any content), and is recalled and shown
in bundles. Model-free this cannot happen: node names are names found in a memory's own text, and an L2 atom
that names them was judged.

Reproduction: L2 and GRAPH models (the OpenAI double). Session s1 says the message above and is erased. Sessions
s2 and s3 mention it again; the extractor answers a bland atom for each ("The user shared some family news.",
"The user talked about a relative."), and the graph model names the entities "Maya" and "Maya's nursing job in
Leeds" for both atoms. The L3 scenes are read from the shard.

Expected: the guard judges a scene's header (its anchor) as it judges its member lines, or a graph model's
entity names as it judges an atom's free-text attributes: no stored scene restates the erased message (none holds
"nursing"); a scene anchored on "Maya" alone, or none, is fine.
"""

from __future__ import annotations

import json
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = "My sister Maya is moving to Leeds for a nursing job in the spring."
LATER = ("Maya got that nursing job in Leeds, she moves in spring.",
         "So Maya really takes the nursing job in Leeds this spring.")
BLAND = {LATER[0]: "The user shared some family news.", LATER[1]: "The user talked about a relative."}
EVENT = "Maya's nursing job in Leeds"


def _answer(body: dict[str, Any]) -> str | int:
    name = body["response_format"]["json_schema"]["name"]
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if name == "ExtractionResult":
        content = BLAND.get(text, text)
        return json.dumps({"atoms": [{"kind": "fact", "content": content, "subject": "family"}]})
    if name == "GraphExtraction":
        if text not in BLAND.values():
            return json.dumps({"entities": [], "relations": []})
        return json.dumps({"entities": [{"name": "Maya", "type": "Entity"}, {"name": EVENT, "type": "Entity"}],
                           "relations": [{"src": "Maya", "dst": EVENT,
                                          "label": "moves to Leeds for nursing in spring"}]})
    return 400


async def test_a_graph_answer_cannot_carry_erased_words(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    with openai_double(_answer) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0),
               ModelTask.GRAPH: LLMSettings(base_url=api.base_url, model="linker", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, ERASED, session="s1")])
            await rt.run_until_idle()
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            await rt.publish([make_turn(2, LATER[0], session="s2")])
            await rt.run_until_idle()
            await rt.publish([make_turn(3, LATER[1], session="s3")])
            await rt.run_until_idle()
        linked = [r for r in api.chat_requests if r["body"]["response_format"]["json_schema"]["name"]
                  == "GraphExtraction"]
    assert linked, "the graph model was never asked"
    atoms = rows(s.data_dir, "SELECT content FROM memories WHERE layer = 'L2'")
    assert {a["content"] for a in atoms} == set(BLAND.values()), atoms  # the atoms say nothing of it
    scenes = rows(s.data_dir, "SELECT content, evidence FROM memories WHERE layer = 'L3'")
    assert scenes, "no scene formed: the two sessions' atoms do not share the model's entity"
    restating = [sc["content"] for sc in scenes if "nursing" in sc["content"]]
    assert restating == [], restating
