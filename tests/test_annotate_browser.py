"""An annotator labels a row in the real Label Studio UI (headless Debian Chromium driven by Playwright) through
the annotators' gateway (the URL `rescue labelstudio up` gives annotators), which refuses none of the interface's
calls, and pull returns exactly what was clicked; a second annotator who then opens the same row in their labeling view
sees none of the first one's answers. Screenshots: build/test-artifacts/annotate_browser.png and
annotate_browser_independent.png."""

from __future__ import annotations



from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.pull import ANNOTATIONS_FILE, pull_annotations
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.push import push_rows
from pipeline.records import Annotation
from pipeline.schema import load_schema
from pipeline.store import read_jsonl
from tests.browser import ARTIFACTS, BROWSER, BROWSER_ARGS, CHROMIUM
from tests.browser import log_in as _log_in
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows

pytestmark = BROWSER


def _select_word(page, text_of_line: str, word: str) -> None:  # noqa: ANN001 - playwright Page
    """Highlight `word` in the people strip as a mouse drag would (a DOM range, then mouseup)."""
    line = page.locator(".lsf-richtext__line", has_text=text_of_line)
    line.evaluate("""(el, word) => {
        const node = el.firstChild, start = node.textContent.indexOf(word);
        const range = document.createRange(); range.setStart(node, start); range.setEnd(node, start + word.length);
        const selection = window.getSelection(); selection.removeAllRanges(); selection.addRange(range);
        el.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
    }""", word)


def test_an_annotator_labels_a_row_in_the_browser_and_pull_returns_what_was_clicked(ls_server: LiveServer) -> None:
    from playwright.sync_api import sync_playwright

    project = ls_server.project
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, "sample/maya_and_daniel", with_clip=True)
    email = "ann@example.org"
    add_annotators(project, ls_server.connection, [email])
    push_rows(project, ls_server.connection, settings=SETTINGS)  # the annotator's own project, every row
    info = ls_server.client.find_project(annotator_title(schema, "couple", email))
    assert info is not None
    row = rows[1]  # "#2 Maya: With the weekend. ..."
    task_id = ls_server.client.task_keys(info.id)[row.row_id][0]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "annotate_browser.png"

    gateway = ls_server.gateway_url
    answers: list[tuple[int, str, str]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            page.set_default_timeout(60_000)
            page.on("response", lambda r: answers.append((r.status, r.request.method, r.url)))
            _log_in(page, gateway, email, annotator_password(project, email))
            page.goto(f"{gateway}/projects/")  # the project list, as an annotator starts
            page.get_by_text(info.title).first.wait_for()
            page.goto(f"{gateway}/projects/{info.id}/data?task={task_id}")
            speaker = page.locator("#field-primary_speaker input[name=Maya]")
            speaker.wait_for()
            # the draft from the transcript is there to correct, not to type
            assert speaker.is_checked()
            assert page.locator("#field-target input[name=Therapist]").is_checked()
            assert page.get_by_text(row.text, exact=True).count() >= 1
            assert page.locator("#field-utterance_type").is_visible()  # a client row: client fields show
            assert not page.locator("#field-relation_cycle_state").is_visible()

            page.locator("#field-target input[name=Daniel]").check()  # correct the target guess
            page.locator("#field-utterance_type input[name=accusation]").check()
            tone = page.locator("[name=tone_of_voice]")
            tone.fill("sharp and hurt")  # typed, not confirmed with Enter: the UI keeps it as typed
            page.locator(".lsf-label__text", has_text="internal_emotion").click()
            _select_word(page, "Maya  Daniel", "Maya")
            page.locator(".lsf-outliner-item__title", has_text="internal_emotion").first.click()
            description = page.locator("[name=internal_emotion__emotion_description]")
            description.fill("feels ignored")
            description.press("Enter")  # a trailing newline is trimmed on pull
            intensity = page.locator("input[name=internal_emotion__intensity]")
            intensity.fill("7")
            intensity.press("Tab")
            page.screenshot(path=str(shot), full_page=True)
            with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as saved:
                page.get_by_role("button", name="Submit").click()
            assert saved.value.ok and saved.value.url.startswith(gateway)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    assert answers and all(url.startswith(gateway) for _, _, url in answers)  # nothing went around the gateway
    assert [a for a in answers if a[0] == 403] == []  # the gateway refused none of the interface's calls
    refused = ls_server.paths.gateway_log.read_text(encoding="utf-8")
    assert f" 403 {email} " not in refused, refused

    summary = pull_annotations(project, ls_server.connection, settings=SETTINGS)
    mine = {r.field: r.value for r in read_jsonl(project.root / summary.folder / ANNOTATIONS_FILE, Annotation)
            if r.annotator == email and r.row_id == row.row_id}
    assert mine == {
        "start_time": row.start, "end_time": row.end,
        "primary_speaker": "Maya", "target": ["Daniel", "Therapist"], "dialogue_cleaned": row.text,
        "utterance_type": "accusation", "tone_of_voice": "sharp and hurt",
        "internal_emotion": [{"person": "Maya", "emotion_description": "feels ignored", "intensity": 7}],
        "background_dialogue": [], "body_posture": [], "facial_expressions": [], "self_directed_behavior": [],
        "interaction_behavior": [], "viewpoints_attitudes": [],
    }
    assert summary.quarantined == 0


def test_a_second_annotator_opening_the_same_row_sees_none_of_the_first_annotators_answers(
        ls_server: LiveServer) -> None:
    from playwright.sync_api import sync_playwright

    project, client = ls_server.project, ls_server.client
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, "sample/maya_and_daniel", with_clip=True)
    first, second = "ada@example.org", "ben@example.org"
    add_annotators(project, ls_server.connection, [first, second])
    push_rows(project, ls_server.connection, settings=SETTINGS)
    row = rows[1]  # "#2 Maya: With the weekend. ..."
    tasks = {}
    for email in (first, second):
        info = client.find_project(annotator_title(schema, "couple", email))
        assert info is not None
        tasks[email] = (info.id, client.task_keys(info.id)[row.row_id][0])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "annotate_browser_independent.png"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()
            page.set_default_timeout(60_000)
            _log_in(page, ls_server.url, first, annotator_password(project, first))
            project_id, task_id = tasks[first]
            page.goto(f"{ls_server.url}/projects/{project_id}/data?task={task_id}")
            page.locator("#field-primary_speaker input[name=Maya]").wait_for()
            page.locator("#field-target input[name=Daniel]").check()
            page.locator("#field-utterance_type input[name=accusation]").check()
            page.locator("[name=tone_of_voice]").fill("icy and clipped")
            with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as saved:
                page.get_by_role("button", name="Submit").click()
            assert saved.value.ok
            (stored,) = client.task_detail(task_id)["annotations"]  # the first annotator's answer is saved
            assert "icy and clipped" in str(stored["result"])

            page = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()  # a fresh session
            page.set_default_timeout(60_000)
            _log_in(page, ls_server.url, second, annotator_password(project, second))
            project_id, task_id = tasks[second]
            with page.expect_response(lambda r: f"/api/tasks/{task_id}" in r.url and r.request.method == "GET") as got:
                page.goto(f"{ls_server.url}/projects/{project_id}/data?task={task_id}")
            speaker = page.locator("#field-primary_speaker input[name=Maya]")
            speaker.wait_for()
            page.screenshot(path=str(shot), full_page=True)
            assert got.value.json()["annotations"] == []  # nothing of anyone else's reached this browser
            assert page.get_by_text(row.text, exact=True).count() >= 1  # the same row, as the first annotator saw it
            assert speaker.is_checked()  # the draft from the transcript, not the first annotator's answer
            assert not page.locator("#field-target input[name=Daniel]").is_checked()
            assert not page.locator("#field-utterance_type input[name=accusation]").is_checked()
            assert page.locator("[name=tone_of_voice]").input_value() != "icy and clipped"
            assert page.get_by_text("icy and clipped").count() == 0
            assert first not in page.content()
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
