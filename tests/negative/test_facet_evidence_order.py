"""A facet version cites the earliest atom of its statement, whichever proposal of it the writer meets last.

The Kafka SIGKILL restore test (two workers with separate data dirs, one killed five times) failed now and
then with one difference from the embedded run: a persona facet citing the later of two atoms that say the
same thing. Govern cites the earliest atom it can see, and a govern lane of a worker whose shard was behind
(it had the later atom and not yet the earlier) proposed the facet from the later atom; that proposal reached
the writer after the one from the earlier atom and replaced it. The writer now keeps the facet on the
earlier atom: its evidence is a function of the atoms stored, not of the order the proposals came in."""

from __future__ import annotations

from altm.bus import OutgoingRecord
from altm.core import Layer, Topic, UpsertMemoryProposal, encode, topic_name
from altm.core.settings import Settings
from altm.pipeline.processors._base import upsert_proposal
from altm.pipeline.processors.facets import facet_version
from altm.store import MemoryReader
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "I prefer short standups, fifteen minutes at most."
FACET = "SELECT evidence, valid_from FROM memories WHERE layer='L4'"


async def test_a_late_facet_proposal_from_the_later_atom_leaves_the_facet_on_the_earlier(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, SAID, session="s0"), make_turn(11, SAID, session="s1")]
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish(turns)
        await rt.run_until_idle()
        before = rows(s.data_dir, FACET)
        reader = MemoryReader(deployment.shards)
        (later,) = [m for m in reader.atoms_with(SCOPE, "facet_key", "preference:standups", Layer.L2)
                    if m.session_id == "s1"]
        stale = facet_version(later, "preference:standups")  # what a lane that saw only s1 made
        late: UpsertMemoryProposal = upsert_proposal(stale, processor="govern", cause=turns[1])
        await rt.log.publish_many([OutgoingRecord(topic_name(Topic.PROPOSALS, s.topic_prefix), encode(late),
                                                  key=late.key)])
        await rt.run_until_idle()
        after = rows(s.data_dir, FACET)
    assert len(before) == 1 and after == before, (before, after)
