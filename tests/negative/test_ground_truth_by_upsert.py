"""A processor cannot claim a reviewer's verdict through ``set_trust`` any more (180fcdd), but it still can
through ``upsert_memory``: a new memory proposed with ``trust.method = ground_truth`` is stored with it as is.

Since 180fcdd a ground_truth verdict is final for the pipeline: verify gives the atom no verdict, the writer keeps
it whatever a processor proposes, the trust sweep never names it, and (approved) it outranks any later
correction (the correction is only "uncertain"). So an atom a stage (or anything that can publish proposals)
writes already "approved by reviewer" is verified for good, boosted at recall, never cross-verified, and turns
every later conflicting statement of the user into a review item, with no reviewer ever having seen it. The
refusal in ``set_trust`` covers one door of two; ``upsert_memory`` should refuse (or strip) a ground_truth
verdict on a proposed memory the same way.
"""

from __future__ import annotations

from altm.core import Kind, Layer, Settings, Trust, TrustMethod, TrustStatus, UpsertMemoryProposal
from altm.pipeline.processors import proposal
from altm.pipeline.writer import Writer
from altm.store import ShardSet
from tests.support.turns import SCOPE
from tests.unit.pipeline.test_writer import N, _proposal, _record


async def test_an_upserted_memory_cannot_arrive_approved_by_a_reviewer(settings: Settings) -> None:
    shards = ShardSet(settings.data_dir, N)
    try:
        writer = Writer(shards, settings)
        message = await _proposal(1, "Our deploy day is Tuesday.")
        writer.apply(_record(message, 0), N)
        l0 = message.memory
        atom = l0.model_copy(update={
            "memory_id": "mem_" + "ab" * 16, "layer": Layer.L2, "kind": Kind.FACT, "evidence": (l0.memory_id,),
            "attributes": {"subject": "deploy day", "values": ["tuesday"]},
            "trust": Trust(status=TrustStatus.VERIFIED, method=TrustMethod.GROUND_TRUTH, confidence=1.0,
                           reason="approved by reviewer")})
        spoof = proposal(UpsertMemoryProposal, scope=SCOPE, processor="extract", cause=message, memory=atom)
        (change,) = writer.apply(_record(spoof, 1), N).changes
        row = shards.get(_record(message, 0).partition).memory_row(atom.memory_id)
    finally:
        shards.close()
    # refused with its reason, or stored without the reviewer's verdict it claims
    assert change.status.value == "rejected" or (row is not None and row["trust_method"] != "ground_truth"), \
        (change.status, None if row is None else (row["trust_status"], row["trust_method"], row["trust_reason"]))
