"""A host cannot make a refusal void by setting ``altm-rederived`` on what it publishes.

A restore marks the changes it publishes again (``REDERIVED_HEADER``) and the stages carry the mark onto what
they propose from them; the writer takes a refusal of a marked proposal as void, not a rejection for review
(the owner derived it first). The mark was read from any record a stage handled, a turn included: a host that
set it on a turn re-sending erased text had its L0 proposal refused silently, with no rejection to review. A
host record's header is the host's: only a change (a record of the writer's) carries the mark on.
"""

from __future__ import annotations

from altm.bus import Record
from altm.core import Settings, Topic, encode, topic_name
from altm.pipeline import ProcessorContext
from altm.pipeline._drivers import run_records
from altm.pipeline.processors import CaptureProcessor
from altm.pipeline.writer import REDERIVED_HEADER, is_rederived
from tests.support.turns import make_turn


async def test_a_turn_marked_rederived_by_its_host_proposes_unmarked(settings: Settings) -> None:
    turn = make_turn(1, "The staging password is hunter2-staging.")
    record = Record(topic_name(Topic.TURNS, settings.topic_prefix), 0, 0, turn.key, encode(turn),
                    headers=((REDERIVED_HEADER, b"1"),))
    result = await run_records(CaptureProcessor(), [record], ProcessorContext(settings=settings))
    (proposal,) = result.outgoing
    assert not is_rederived(proposal.headers), proposal.headers
