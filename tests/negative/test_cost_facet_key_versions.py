"""Each new statement of a facet key reads every atom and every version of that key: quadratic in the versions.

Red team rt20 (scaling): one user stating a new preference about the same thing each session ("I prefer tool17 for
the ingestion service.": facet key ``preference:ingestion service``), one turn derived at a time: 100 / 400 turns
took 2.8 s / 20.4 s; govern decoded 173,052 rows for 400 turns. ``GovernProcessor._facet``
(altm/pipeline/processors/govern.py:237) reads all the user's atoms of the key (``atoms_with``, user-wide) and
``_place`` (govern.py:289) all its facet versions, and asks ``held_pending`` for each version (govern.py:302):
O(versions) decoded rows and SQL statements per statement. Keys are coarse (``identity:role`` for every "I work
on ...", ``preference:general`` for any preference without content words), so a long-lived user's keys gather
hundreds of versions."""

from __future__ import annotations

import pytest

from altm.core import Settings
from altm.store import MemoryReader
from tests.support.memories import running
from tests.support.turns import make_turn

GAP = pytest.mark.xfail(strict=True, reason=(
    "known gap (README, Known gaps): a new version of a persona facet key reads every atom and version of the key "
    "(its neighbours by first saying would do)"))


STATEMENTS = 50


@GAP
async def test_a_new_facet_version_reads_a_bounded_part_of_its_key(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    read = {"rows": 0}

    def counting(name: str):  # type: ignore[no-untyped-def]
        original = getattr(MemoryReader, name)

        def wrapper(self, *args, **kw):  # type: ignore[no-untyped-def]
            out = original(self, *args, **kw)
            read["rows"] += len(out)
            return out
        return wrapper

    for name in ("atoms_with", "facet_versions"):
        monkeypatch.setattr(MemoryReader, name, counting(name))
    s = settings.model_copy(update={"embedder": "none"})
    async with running(s) as rt:
        for i in range(STATEMENTS):
            await rt.publish([make_turn(i, f"I prefer tool{i} for the ingestion service.", session=f"s{i}")])
            await rt.run_until_idle()
        versions = await rt.log.read_all(["altm.changes"])
    assert len(versions) > STATEMENTS
    assert read["rows"] <= 10 * STATEMENTS, (
        f"govern decoded {read['rows']} atoms and facet versions for {STATEMENTS} statements of one facet key: "
        "each statement reads the key's whole history")
