"""Superseded versions stay out of default recall and listings; as_of and known_at bring them back."""

from __future__ import annotations

from datetime import datetime, timedelta

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

TURNS = [make_turn(1, "I prefer dark mode in every editor.", session="a"),
         make_turn(3, "I prefer light mode in the editor now, actually.", session="b")]


async def test_superseded_facets_only_with_as_of_or_known_at(settings: Settings) -> None:
    async with store_with(settings, TURNS) as (_, app):
        now = app.search(SCOPE, "c", "editor mode dark light", preset_name="lexical", top_k=20).hits
        facets = [h.content for h in now if h.layer == "L4"]
        assert facets and all("light" in f for f in facets)  # the superseded dark version is absent
        listed = [r["content"] for r in app.list_memories(SCOPE, layer="L4")]
        assert listed and all("light" in c for c in listed)
        prepared = await app.prepare_turn(SCOPE, "c", "c1", "editor mode dark light", 2000)
        assert not any("dark" in i.text for i in prepared.bundle.items if i.layer == "L4")

        before = app.search(SCOPE, "c", "editor mode dark light", preset_name="lexical", top_k=20,
                            as_of=T0 + timedelta(minutes=2)).hits
        assert [h.content for h in before if h.layer == "L4"] == [
            "Preference (mode editor): I prefer dark mode in every editor."]

        (dark,) = rows(settings.data_dir, "SELECT recorded_at, superseded_at FROM memories WHERE layer='L4' "
                       "AND superseded_by IS NOT NULL")
        believed = app.search(SCOPE, "c", "editor mode dark light", preset_name="lexical", top_k=20,
                              known_at=datetime.fromisoformat(dark["recorded_at"])).hits
        assert any("dark" in h.content for h in believed if h.layer == "L4")
        assert not any("light" in h.content for h in believed if h.layer == "L4")
