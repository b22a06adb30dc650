"""A correction and the statement it corrects, delivered together with the correction first, both stay current.

Finding: ``GovernProcessor._facet`` (altm/pipeline/processors/govern.py:178-218) proposes a supersession in two
places, and when both atoms of a facet key are stored before either is governed (one delivery: one host batch,
``altm ingest`` of a file, a Kafka poll after a rebalance or a lagging partition, a replay) neither of them
lands:
- governing the correction (light mode, dated later) first, ``earlier`` (line 198) holds the older atom (dark
  mode), so ``previous`` is *its* facet version (line 201) and a ``SupersedeProposal`` names it
  (lines 206-207), but that facet is not stored: it is proposed later in the same batch, when the dark atom is
  governed. The writer refuses the supersession (``target_row``, altm/pipeline/writer/ops/governance.py:53:
  "no superseded memory ...") and files a rejection the user never caused;
- governing the dark atom next, ``later`` finds the light atom, but since commit 82ffb0f the step is made only
  when the light facet is stored already (``reader.holds(mem.scope, following.memory_id)``, line 216): it is
  not, its upsert is an earlier proposal of the same batch, so no step is proposed.
(Without that check the second step lands, but the first one's rejection stays.) Both facets end current (no
supersession, no held action), and recall answers the persona with the value the
user corrected beside the correction. Delivered in time order in one batch, or one at a time in either order
(``test_correction_before_corrected.py``), the dark facet is superseded by the light one. The state depends on
arrival order, which the README says it does not ("two statements end the same in either arrival order",
README's findings table). The same holds on the Kafka runtime (a worker given the two turns in one poll ends
with both facets current, as the embedded runtime does: checked by hand against a broker, six users, all six).

Reproduction: the turns "I prefer light mode in the editor now, actually." (session b, T0 + 10 days) and "I
prefer dark mode in every editor." (session a, T0) published in one ``publish``, the correction first; run until
idle. Compare with the same two turns published in time order in one ``publish``.

Expected: the same state as in time order: the dark facet is superseded by the light facet (``superseded_by`` =
the light facet's id), the light facet is current, and no rejection is filed (e.g. the ``earlier`` step is made
only once the predecessor's facet is stored, as the ``later`` step is, or a step naming a facet proposed in the
same batch is ordered after that facet's upsert, or the ``holds`` check also counts the facets the batch
proposes).
"""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from tests.support.facets import dark_and_light_facets, dark_then_light
from tests.support.memories import store_with
from tests.support.rows import rows


async def test_a_correction_delivered_first_in_one_batch_supersedes_the_older_statement(
        settings: Settings, tmp_path: Path) -> None:
    dark, light = dark_then_light()
    in_time = settings.model_copy(update={"embedder": "none", "data_dir": tmp_path / "in-time"})
    async with store_with(in_time, [dark, light]):
        pass
    expected = dark_and_light_facets(in_time.data_dir)
    assert expected["dark"]["superseded_by"] == expected["light"]["memory_id"]  # in time order: superseded

    reversed_ = settings.model_copy(update={"embedder": "none", "data_dir": tmp_path / "reversed"})
    async with store_with(reversed_, [light, dark]):
        pass
    facets = dark_and_light_facets(reversed_.data_dir)
    filed = [str(r["reason"]) for r in rows(reversed_.data_dir, "SELECT reason FROM rejections")]
    assert set(facets) == {"dark", "light"}, facets
    assert facets["light"]["superseded_by"] is None
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"], (
        "the corrected dark-mode facet stays current when its correction came first in the same delivery",
        facets, filed)
    assert filed == [], f"a rejection the user never caused: {filed}"
    assert facets == expected
