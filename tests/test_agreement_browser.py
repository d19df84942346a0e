"""The HTML agreement report in a real browser (headless Debian Chromium via Playwright): it renders, its
figures load, and it needs nothing from outside the file. Screenshot: build/test-artifacts/agreement_report.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.agreement.agree import run_agree
from pipeline.agreement.inputs import write_annotations
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.synthetic import make_annotations, make_sessions
from pipeline.project import Project
from pipeline.schema import load_schema

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking"]

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (make setup)")]


def test_report_renders_with_every_figure_loaded(project: Project) -> None:
    from playwright.sync_api import sync_playwright

    project.schemas.mkdir()
    shutil.copy(REPO / "annotation_schemas" / "rescue-v1.yaml", project.schemas)
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    sessions = make_sessions(5, family_share=0.4, rows_couple=12, rows_family=16)
    write_annotations(project.build / "annotations" / "20261130T100000Z" / "annotations.jsonl",
                      make_annotations(schema, sessions, ["a@lab.org", "b@lab.org", "c@lab.org"], agreement=0.75))
    html = run_agree(project, AgreementSettings(bootstrap_samples=50), text=False).html

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            outside: list[str] = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: outside.append(request.url)
                    if not request.url.startswith(("file:", "data:")) else None)
            page.goto(html.as_uri(), wait_until="load")
            assert "Inter-annotator agreement" in page.title() + page.inner_text("h1")
            images = page.eval_on_selector_all(
                "img", "els => els.map(e => ({complete: e.complete, width: e.naturalWidth, alt: e.alt}))")
            assert len(images) >= 4  # per-field chart, annotator heatmap and confusion matrices
            assert all(img["complete"] and img["width"] > 100 for img in images), images
            assert page.locator("th", has_text="Krippendorff's alpha").count() >= 1
            assert page.locator("#fig-pairs img").count() == 1 and page.locator("#fig-per-field img").count() == 1
            assert page.locator("td", has_text="utterance_type").count() >= 1
            assert page.locator("th", has_text="percent agreement").count() >= 1
            assert page.locator("#disagreements").count() == 1
            page.locator("#disagree-utterance_type summary").click()  # the collapsed list opens
            assert page.locator("#disagree-utterance_type table.disagreements tbody tr").first.is_visible()
            artifacts = REPO / "build" / "test-artifacts"
            artifacts.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(artifacts / "agreement_report.png"), full_page=False)
        finally:
            browser.close()
    assert errors == [] and outside == []
