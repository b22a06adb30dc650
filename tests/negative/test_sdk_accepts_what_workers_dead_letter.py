"""The host SDK accepts (and reports as durable) events that every worker dead-letters.

Finding: ``HostProducer.publish_many`` (altm/interfaces/sdk/_producer.py:87-91) only encodes the events
(``host_record``) and commits them to its outbox; it applies none of the checks the workers apply to the same
records. The workers then refuse them:

- a turn over ``ALTM_MAX_CONTENT_BYTES`` is dead-lettered by capture
  (altm/pipeline/processors/capture.py:39-40), although ``altm publish``/``altm ingest`` refuse it at input
  (``checked``, altm/app/ingest.py:67-72) and ``prepare_turn``/``commit_turn`` refuse it before publishing
  (altm/app/_protocol.py:179);
- a control event whose payload is not a valid request (an erasure of a session without its ``session_id``,
  an erasure of an unknown target) is dead-lettered by the control stage (``control_proposal``,
  altm/pipeline/processors/control.py:50-53).

``publish`` returns, ``flush`` reports it delivered, and the host never learns that its turn was not stored or
that the user's erasure request (a GDPR request) was never applied: the reason is only in the DLQ topic.

Reproduction: ``HostProducer(...).publish(turn with 64 KiB + 1 bytes of content)`` and
``publish(ControlEvent(action=ERASE, payload={"target": "session"}))`` both return, and ``pending()`` counts
them for delivery.

Expected: ``publish``/``publish_many`` refuse such an event with a ``ValueError`` (e.g. ``DecodeError``) that
says why (the same reason the worker would give: "content is N bytes, over the limit of 65536", "erasing a
session needs its session_id"), and nothing of the call is put in the outbox.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from altm.core import ControlAction, ControlEvent
from altm.core.settings import Settings
from altm.interfaces.sdk import HostProducer
from tests.support.turns import SCOPE, make_turn


def _producer(tmp_path: Path) -> HostProducer:
    # nothing listens on port 9: the producer is not started, only its outbox is used
    return HostProducer("kafka://127.0.0.1:9", tmp_path / "outbox.db", settings=Settings(partitions=4))


async def test_a_turn_over_the_content_limit_is_refused_by_the_sdk(tmp_path: Path) -> None:
    producer = _producer(tmp_path)
    limit = producer.settings.max_content_bytes
    try:
        with pytest.raises(ValueError, match="over the limit"):
            await producer.publish(make_turn(1, "x" * (limit + 1)))
        assert producer.pending() == 0, "the SDK committed a turn that capture dead-letters"
    finally:
        producer._outbox.close()


async def test_an_erasure_request_the_control_stage_cannot_apply_is_refused_by_the_sdk(tmp_path: Path) -> None:
    producer = _producer(tmp_path)
    erase = ControlEvent(event_id="ctl_erase_s", scope=SCOPE, timestamp=datetime(2026, 12, 1, tzinfo=UTC),
                         action=ControlAction.ERASE, payload={"target": "session", "reason": "user asked"})
    try:
        with pytest.raises(ValueError, match="session_id"):
            await producer.publish_many([make_turn(1, "a good turn"), erase])
        assert producer.pending() == 0, "the SDK committed an erasure request the control stage dead-letters"
    finally:
        producer._outbox.close()
