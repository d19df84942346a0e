"""What an annotator sees in the real Label Studio form (headless Debian Chromium driven by Playwright): the
preceding rows with their real times, each taxonomy label's definition (on hover and in a panel), and the
list-item instruction. Screenshots go to build/test-artifacts/annotate_form_*.png (look at them)."""

from __future__ import annotations

from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.push import push_rows
from pipeline.annotate.tasks import clock
from pipeline.schema import load_schema
from tests.browser import ARTIFACTS, BROWSER, BROWSER_ARGS, CHROMIUM  # noqa: F401
from tests.browser import log_in as _log_in
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows

pytestmark = BROWSER  # skipped where Debian chromium is missing


def test_the_form_shows_real_context_times_label_definitions_and_the_item_instruction(ls_server: LiveServer) -> None:
    from playwright.sync_api import sync_playwright

    project = ls_server.project
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, "sample/maya_and_daniel", with_clip=True)
    email = "form@example.org"
    add_annotators(project, ls_server.connection, [email])
    push_rows(project, ls_server.connection, settings=SETTINGS, annotators=(email,))
    info = ls_server.client.find_project(annotator_title(schema, "couple", email))  # the annotator's own project
    assert info is not None
    client_row = next(r for r in rows[2:] if r.speaker != schema.therapist)  # with two preceding rows
    therapist_row = next(r for r in rows[1:] if r.speaker == schema.therapist)
    keys = ls_server.client.task_keys(info.id)
    utterance = schema.label_guide("utterance_type", "couple")
    pattern = schema.label_guide("relation_pattern", "couple")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2200})
            page.set_default_timeout(60_000)
            _log_in(page, ls_server.url, email, annotator_password(project, email))

            page.goto(f"{ls_server.url}/projects/{info.id}/data?task={keys[client_row.row_id][0]}")
            page.locator("#field-primary_speaker").wait_for()
            body = page.locator("body").inner_text()
            # the preceding rows: plain lines with each row's real time, no zero times and no region buttons
            assert "00:00:00 - 00:00:00" not in body
            before = rows[client_row.row_index - 3:client_row.row_index - 1]
            assert len(before) == 2
            for row in before:
                line = page.locator("p", has_text=row.text).filter(has_text=f"{clock(row.start)}-{clock(row.end)}")
                # the context can render after the fields (seen under load), and count() does not wait for it
                line.first.wait_for()
                assert line.count() == 1 and line.is_visible()
                assert f"{row.speaker}:" in line.inner_text()
            assert page.locator(".lsf-paragraphs").count() == 0
            # the list-item interaction says what to do, in order, right at the field
            page.locator("#items-instruction").wait_for(state="visible")  # raises if it never shows (rendered late)
            assert "1. press its kind's key" in page.locator("#items-instruction").inner_text()
            # a taxonomy label's definition appears on hover ...
            label, definition = utterance.definitions[0]
            page.locator("#field-utterance_type").get_by_text(label).first.hover()
            page.get_by_text(definition, exact=True).wait_for()
            # ... and every definition and rule is one click away, in the field's panel
            panel = page.locator("#definitions-utterance_type")
            assert not panel.is_visible()
            page.get_by_text("Definitions and rules: utterance_type").click()
            panel.wait_for()
            shown = panel.inner_text()
            assert all(f"{name}: {text}" in shown for name, text in utterance.definitions)
            assert all(rule in shown for rule in utterance.rules)
            page.screenshot(path=str(ARTIFACTS / "annotate_form_client.png"), full_page=True)

            page.goto(f"{ls_server.url}/projects/{info.id}/data?task={keys[therapist_row.row_id][0]}")
            page.locator("#field-relation_cycle_state").wait_for()
            label, definition = pattern.definitions[1]
            page.locator("#field-relation_cycle_state").get_by_text(label).first.hover()
            page.get_by_text(definition, exact=True).wait_for()
            page.get_by_text("Definitions and rules: relation_cycle_state").click()
            assert "not a fallback" in page.locator("#definitions-relation_cycle_state").inner_text()
            page.screenshot(path=str(ARTIFACTS / "annotate_form_therapist.png"), full_page=True)
        finally:
            browser.close()
