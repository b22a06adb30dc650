from __future__ import annotations

from pathlib import Path

from altm.core.export import default_dir, export_schemas, render_schemas, stale_schemas

REPO_SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


def test_exported_json_schemas_are_up_to_date() -> None:
    stale = stale_schemas(REPO_SCHEMAS)
    assert stale == [], f"run `altm export-schemas` and commit schemas/: stale {stale}"


def test_export_writes_every_schema_and_detects_staleness(tmp_path: Path) -> None:
    written = export_schemas(tmp_path)
    assert {p.name for p in written} == set(render_schemas())
    assert stale_schemas(tmp_path) == []
    (tmp_path / "turn_event.schema.json").write_text("{}")
    assert stale_schemas(tmp_path) == ["turn_event.schema.json"]


def test_export_dir_is_schemas_of_the_working_directory() -> None:
    assert default_dir() == Path("schemas")
    assert (REPO_SCHEMAS / "event.schema.json").exists()
