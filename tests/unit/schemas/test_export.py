from __future__ import annotations

from pathlib import Path

from altm.schemas.export import default_dir, export_schemas, render_schemas, stale_schemas


def test_exported_json_schemas_are_up_to_date() -> None:
    stale = stale_schemas()
    assert stale == [], f"run `altm export-schemas` and commit schemas/json: stale {stale}"


def test_export_writes_every_schema_and_detects_staleness(tmp_path: Path) -> None:
    written = export_schemas(tmp_path)
    assert {p.name for p in written} == set(render_schemas())
    assert stale_schemas(tmp_path) == []
    (tmp_path / "turn_event.schema.json").write_text("{}")
    assert stale_schemas(tmp_path) == ["turn_event.schema.json"]


def test_export_dir_is_the_repos_schemas_json() -> None:
    assert default_dir().name == "json"
    assert (default_dir() / "event.schema.json").exists()
