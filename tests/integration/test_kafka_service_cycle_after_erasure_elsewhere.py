"""On Kafka, a retrieval service still commits a cycle of a session that another process erased: the reply is
stored in the erased session.

Finding: the fix of ``test_cycle_book_erased_session.py`` (commit 779bd3e) drops the cycles an erasure takes from
the cycle book of *the process that published the erasure* only: ``AdminService.erase``
(altm/app/_admin.py:120-121, ``self.cycles.forget_cycles(...)``). A Kafka deployment runs several processes
that publish to the same log: retrieval services (``altm serve --broker``, one per replica behind a load
balancer), ``altm erase --broker`` and the host SDK (an erasure is a control event on the log, applied by the
workers). The writer deletes the erased session's ``runtime_cycles`` rows (``_TxErasure.erase_records``), but a
service that prepared a cycle of that session keeps it in its book (``CycleBook._recent``,
altm/app/_cycles.py): ``CycleBook.get`` (lines 51-61) answers with the book's ``prepared`` cycle when the store
has none, so ``commit_turn`` (altm/app/_protocol.py:287-) publishes the assistant's reply (written from a bundle
that quoted the erased memories) as a turn of the erased session, with the cycle's record and its citations.
The session the user had erased gets a message back (and the cycle can never be evicted from the book: it is
never stored again, the unbounded growth of ``test_cycle_book_erased_session.py``). In one process, the same
commit is refused (``UnknownCycle``) since that fix.

Reproduction: a worker on Kafka; two app instances over the deployment (service A and service B: each
``open_deployment`` with ``--broker``, the workers' data dir read-only, as ``altm serve --broker`` opens it).
A prepares a turn of session s1 (the worker stores the message and the cycle); B erases session s1 (the worker
applies it: no memory of s1 is left); A's host commits the cycle with a reply.

Expected: as in one process, the commit is refused with ``UnknownCycle`` and session s1 holds nothing after the
worker is idle (e.g. a service treats a cycle the store held once and holds no longer as gone: its session, agent
or user was erased; or the service follows the erasures on the log and drops the cycles they take).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from altm.app import UnknownCycle
from altm.core import Settings
from altm.wiring import Deployment, open_deployment
from altm.wiring._adapters import resolve
from altm.wiring._worker import prepare_kafka
from tests.support.kafka_history import worker
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn
from tests.support.workers import wait_until_idle

pytestmark = pytest.mark.kafka

SAID = "The deadline for the billing migration is December 15 and Priya owns the cutover."
ASKED = "Where does the billing migration stand?"


async def _service(settings: Settings) -> Deployment:
    """An app over the Kafka deployment, as ``altm serve --broker`` opens it (no read replica)."""
    service = await open_deployment(settings)
    await service.start()
    return service


def _session(data_dir: Path) -> list[str]:
    return [str(r["content"]) for r in rows(data_dir, "SELECT content FROM memories WHERE session_id = 's1'")]


async def test_a_cycle_of_a_session_erased_by_another_service_is_not_committed(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"c{uuid.uuid4().hex[:10]}."
    settings = Settings(data_dir=tmp_path / "worker", broker=f"kafka://{kafka_bootstrap}", topic_prefix=prefix,
                        partitions=4, embedder="none", worker_session_timeout_s=6)
    await prepare_kafka(resolve(settings))
    async with worker(settings):
        service_a = await _service(settings)
        service_b = await _service(settings)
        try:
            await service_a.publish([make_turn(0, SAID)])  # session s1 said something before
            await wait_until_idle(kafka_bootstrap, prefix, data_dir=settings.data_dir)
            prepared = await service_a.app.prepare_turn(SCOPE, "s1", "s1-t1", ASKED, 2000,
                                                        timestamp=T0 + timedelta(minutes=5))
            assert prepared.bundle.items  # the bundle quotes session s1
            await wait_until_idle(kafka_bootstrap, prefix, data_dir=settings.data_dir)
            assert ASKED in _session(settings.data_dir)  # the worker stored the message (and the cycle)
            assert rows(settings.data_dir, "SELECT 1 FROM runtime_cycles WHERE cycle_id = ?", (prepared.cycle_id,))
            await service_b.app.erase(SCOPE, "session", session_id="s1")
            await wait_until_idle(kafka_bootstrap, prefix, data_dir=settings.data_dir)
            assert _session(settings.data_dir) == []  # the erasure is applied: session s1 is gone
            try:
                await service_a.app.commit_turn(prepared.cycle_id, "The cutover Priya owns is due December 15.")
            except UnknownCycle:
                refused = True  # as one process answers since the cycle book's fix
            else:
                refused = False
            await wait_until_idle(kafka_bootstrap, prefix, data_dir=settings.data_dir)
            stored = _session(settings.data_dir)
        finally:
            await service_a.close()
            await service_b.close()
    assert stored == [], f"the reply to a cycle of the erased session was stored in it: {stored}"
    assert refused, "service A committed a cycle of a session service B had erased"
