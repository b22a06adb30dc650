"""The memory browser in a real headless Chromium (Debian's package, driven by Playwright; no browser download),
against ``altm serve`` on a loopback port: log in with a key, follow a memory's evidence to L0, search, approve a
review item, preview and roll back a governance decision, erase a session and see it gone, and check that a
memory whose content is an HTML/JS payload renders inert. Screenshots of the main pages go to
``benchmarks/results/browser/`` (not committed).

``scripts/test.sh`` installs Chromium when it can; without a browser these tests skip and say why."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from altm.interfaces.cli import app, sample_path
from tests.support.processes import altm_process, free_port

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
CHROMIUM = os.environ.get("ALTM_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium: scripts/test.sh installs Debian's chromium "
                                "(apt-get install chromium) when it can; set ALTM_TEST_CHROMIUM to use another")

SCOPE = "acme/platform/dana/coder"
PAYLOAD = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
           '<a href="javascript:window.__pwned=3">click</a> We decided the payload session is for testing.')
SHOTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "browser"
runner = CliRunner()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    d = tmp_path_factory.mktemp("browser") / "data"
    extra = d.parent / "payload.jsonl"
    extra.write_text(json.dumps({"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana",
                                 "agent_id": "coder", "session_id": "xss", "turn_id": "xss-t1", "role": "user",
                                 "content": PAYLOAD, "timestamp": "2026-11-20T09:00:00Z"}) + "\n")
    for source in (sample_path(), extra):
        assert runner.invoke(app, ["ingest", "--data-dir", str(d), str(source)]).exit_code == 0
    forgot = runner.invoke(app, ["retention", "--data-dir", str(d)], env={"ALTM_RETENTION_DAYS_L1": "1"})
    assert forgot.exit_code == 0, forgot.output  # L1 capsules older than a day: governance decisions to roll back
    keys = {}
    for name, prefix in (("dana", "acme/platform/dana"), ("reviewer", "acme/platform/dana/reviewer")):
        made = runner.invoke(app, ["keys", "create", "--data-dir", str(d), "--name", name, "--scope-prefix", prefix])
        assert made.exit_code == 0
        keys[name] = made.output.strip()
    port = free_port()
    with altm_process(["serve", "--data-dir", str(d), "--port", str(port)], port):
        yield f"http://127.0.0.1:{port}", keys


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    dialogs: list[str] = []

    def dismissed(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    tab.on("dialog", dismissed)
    tab.dialogs = dialogs
    try:
        yield tab
    finally:
        context.close()


def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _login(page: Any, base: str, key: str) -> None:
    page.goto(f"{base}/ui/memories?scope={SCOPE}")
    assert page.url.endswith("/ui/login")  # not logged in: sent to the login page
    _shot(page, "01-login")
    page.fill("#api_key", key)
    page.click("#login")
    page.wait_for_url(re.compile(r"/ui/scopes$"))


def _eventually(page: Any, url: str, done: Callable[[Any], bool], timeout_s: float = 30.0) -> None:
    """Reload ``url`` until ``done(page)``: control events are applied by the writer in the background."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.goto(url)
        if done(page):
            return
        assert time.monotonic() < deadline, f"{url} never reached the expected state"
        time.sleep(0.5)


def test_login_browse_follow_evidence_to_l0_and_search(served: tuple[str, dict[str, str]], page: Any) -> None:
    base, keys = served
    _login(page, base, keys["dana"])
    assert page.locator("ul.scopes a", has_text=SCOPE).count() == 1
    _shot(page, "02-scopes")
    page.click(f"ul.scopes a:text-is('{SCOPE}')")
    page.select_option("#layer", "L2")
    page.click("#filter")
    page.wait_for_url(re.compile(r"layer=L2"))
    _shot(page, "03-memories-L2")
    atom = page.locator("a.memory-link", has_text="migrating the billing service").first
    atom_text = atom.inner_text()
    atom.click()
    page.wait_for_selector("#evidence")
    assert page.locator("#memory-content").inner_text() == atom_text
    assert page.locator("#trust .trust").inner_text() in {"supported", "unverified", "uncertain", "verified",
                                                            "contradicted", "unverifiable"}
    assert "weight" in page.locator("#lifecycle").inner_text()
    assert page.locator("svg.graph circle").count() >= 2  # the drawn neighbourhood
    assert page.locator("#audit tbody tr").count() >= 1
    _shot(page, "04-memory")
    page.locator("#evidence a.evidence-link").first.click()  # down the chain to the raw turn
    page.wait_for_selector("h1 .layer.L0")
    assert "migrating the billing service from Flask to FastAPI" in page.locator("#memory-content").inner_text()
    _shot(page, "05-evidence-L0")
    page.goto(f"{base}/ui/memories?scope={SCOPE}")
    page.fill("#q", "when is the billing deadline")
    page.click("#filter")
    page.wait_for_url(re.compile(r"q=when"))
    assert "January 10" in page.locator("table.memories").inner_text()


def test_an_html_payload_renders_inert(served: tuple[str, dict[str, str]], page: Any) -> None:
    base, keys = served
    _login(page, base, keys["dana"])
    page.goto(f"{base}/ui/memories?scope={SCOPE}&layer=L0&q=payload+session+testing")
    link = page.locator("a.memory-link", has_text="window.__pwned").first
    assert "<script>window.__pwned = 1</script>" in link.inner_text()  # shown as text
    link.click()
    page.wait_for_selector("#memory-content")
    assert page.locator("#memory-content").inner_text().startswith("<script>window.__pwned = 1</script>")
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("main script, main img, main a[href^='javascript:']").count() == 0
    assert page.dialogs == []
    _shot(page, "06-payload-inert")


def test_approve_a_review_item(served: tuple[str, dict[str, str]], page: Any) -> None:
    base, keys = served
    _login(page, base, keys["dana"])
    page.goto(f"{base}/ui/review?scope={SCOPE}")
    item = page.locator("div.item", has_text="The deadline is December 15.").first
    item_id = item.get_attribute("id")
    assert item_id is not None
    _shot(page, "07-review")
    item.locator("button.approve").click()
    assert "approve" in page.locator("#queued").inner_text()
    _eventually(page, f"{base}/ui/review?scope={SCOPE}", lambda p: p.locator(f"[id='{item_id}']").count() == 0)


def test_preview_and_roll_back_a_governance_decision(served: tuple[str, dict[str, str]], page: Any) -> None:
    base, keys = served
    _login(page, base, keys["dana"])
    page.goto(f"{base}/ui/governance?scope={SCOPE}")
    rows = page.locator("table.governance tbody tr", has_text="forget")
    assert rows.count() >= 1
    _shot(page, "08-governance")
    rows.first.locator("a", has_text="preview").click()
    page.wait_for_selector("ol.steps")
    steps = page.locator("ol.steps").inner_text()
    assert "forget" in steps and steps.index("decided") < steps.index("applied")  # in the order they happened
    _shot(page, "09-decision-preview")
    page.fill("#reason", "the capsule is still needed")
    page.check("input[name=confirm]")
    page.click("#rollback")
    assert "rollback" in page.locator("#queued").inner_text()
    _eventually(page, f"{base}/ui/governance?scope={SCOPE}",
                lambda p: p.locator("table.governance tbody tr", has_text="rollback").count() >= 1)


def test_erase_a_session_and_see_it_gone(served: tuple[str, dict[str, str]], page: Any) -> None:
    base, keys = served
    _login(page, base, keys["dana"])
    page.goto(f"{base}/ui/memories?scope={SCOPE}&layer=L0&q=payload+session+testing")
    page.locator("a.memory-link", has_text="window.__pwned").first.click()
    erased_url = page.url
    page.click("#erase-session")
    assert int(page.locator("#erase-count").inner_text()) >= 1
    _shot(page, "10-erase-confirm")
    page.click("#erase")  # the confirmation box is required: nothing is sent without it
    assert "/ui/erase?" in page.url and page.locator("#queued").count() == 0  # still the confirmation page
    page.check("#confirm")
    page.click("#erase")
    assert "erasure of the session" in page.locator("#queued").inner_text()
    _eventually(page, erased_url, lambda p: "404" in p.locator("h1").inner_text())
    page.goto(f"{base}/ui/memories?scope={SCOPE}&layer=L0")
    assert "window.__pwned" not in page.locator("main").inner_text()


def test_an_agent_key_sees_only_its_agent(served: tuple[str, dict[str, str]], page: Any) -> None:
    base, keys = served
    page.goto(f"{base}/ui/login")
    page.fill("#api_key", keys["reviewer"])
    page.click("#login")
    page.wait_for_url(re.compile(r"/ui/scopes$"))
    assert page.locator("ul.scopes a").all_inner_texts() == ["acme/platform/dana/reviewer"]
    page.goto(f"{base}/ui/memories?scope={SCOPE}")
    assert "403" in page.locator("h1").inner_text()
    assert "limited to 'acme/platform/dana/reviewer'" in page.locator("main").inner_text()
