"""Issue 16, terminal polish: the demo's bundle panel folds long memory lines at its edge instead of cropping
them, and memory content (untrusted) is never read as rich markup."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rich.console import Console

from altm.interfaces.cli import demo

LONG = ("- [L2 decision] trust: unverifiable · how: heuristic · from: user · We decided to deploy the billing "
        "service behind nginx on port 8443 [bold red]not markup[/] and to keep the old Flask app until March 3.")


def test_the_demo_panel_folds_long_lines_and_prints_content_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Console(width=80, record=True, soft_wrap=True, color_system=None)
    monkeypatch.setattr(demo, "console", recorder)
    bundle = SimpleNamespace(rendered=LONG, items=[], tokens=42, token_budget=800)
    demo._show("where do we deploy billing?", SimpleNamespace(bundle=bundle, cycle_id="cyc_1"))
    out = recorder.export_text()
    assert all(len(line) <= 80 for line in out.splitlines())
    inside = [line for line in out.splitlines() if line.startswith("│")]
    flat = "".join(line.strip("│").strip() for line in inside)
    # every character is there, none cropped, and "[bold red]…[/]" printed as it was written, not as markup
    assert "".join(LONG.split()) == "".join(flat.split())


def test_long_commands_show_progress_against_their_totals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16, terminal polish: ingest and replay show lines (or events) against their total and records
    processed as they go, instead of a spinner."""
    from altm.interfaces.cli import _common

    monkeypatch.setattr(_common, "console", Console(width=100, record=True, color_system=None))
    with _common.PipelineProgress("lines", 10) as progress:
        progress("published", 4)
        progress("processed", 3)
        progress("published", 10)
        progress("processed", 5)
        assert progress.completed() == (10, 8)
    assert "10/10" in _common.console.export_text()
    with _common.PipelineProgress("events", None) as replay:
        replay("events", 7)
        replay("records", 20)
        assert replay.completed() == (7, 20)
