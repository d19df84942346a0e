"""A model's drafts appear as the pre-filled annotation in the real Label Studio labelling view (headless
Debian Chromium driven by Playwright): push a drafts file, open the drafted row as its annotator, the
drafted label is selected; submitting it unchanged (after typing the one required field nobody drafted)
comes back from pull as that label. Screenshot:
build/test-artifacts/preannotate_browser.png. The drafts file is a test input (what a preannotate backend
writes), not a fake of the system under test."""

from __future__ import annotations

from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.pull import ANNOTATIONS_FILE, pull_annotations
from pipeline.annotate.push import push_rows
from pipeline.preannotate.drafts import RowDraft, SessionDrafts, drafts_path
from pipeline.records import Annotation
from pipeline.schema import load_schema
from pipeline.store import read_jsonl, write_text_atomic
from tests.browser import ARTIFACTS, BROWSER, BROWSER_ARGS, CHROMIUM  # noqa: F401
from tests.browser import log_in as _log_in
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows

pytestmark = BROWSER  # skipped where Debian chromium is missing

MAYA = "sample/maya_and_daniel"


def test_a_drafted_label_is_pre_selected_in_the_labelling_view(ls_server: LiveServer) -> None:
    from playwright.sync_api import sync_playwright

    project = ls_server.project
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, MAYA, with_clip=True)
    row = rows[1]  # "#2 Maya: With the weekend. ..."
    drafts = SessionDrafts(session_id=MAYA, backend="gold-model", model="m1", schema_id=schema.id, rows=(
        RowDraft(row_id=row.row_id, values={"utterance_type": "recollection", "target": ["Daniel"]},
                 scores={"utterance_type": 0.74, "target": 0.66}),))
    write_text_atomic(drafts_path(project.build, MAYA), drafts.model_dump_json())
    email = "ann@example.org"
    add_annotators(project, ls_server.connection, [email])
    push_rows(project, ls_server.connection, settings=SETTINGS)
    info = ls_server.client.find_project(annotator_title(schema, "couple", email))
    assert info is not None and info.model_version == drafts.model_version
    task_id = ls_server.client.task_keys(info.id)[row.row_id][0]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "preannotate_browser.png"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            page.set_default_timeout(60_000)
            _log_in(page, ls_server.url, email, annotator_password(project, email))
            page.goto(f"{ls_server.url}/projects/{info.id}/data?task={task_id}")
            drafted = page.locator("#field-utterance_type input[name=recollection]")
            drafted.wait_for()
            assert drafted.is_checked()  # the model's draft, pre-selected
            assert not page.locator("#field-utterance_type input[name=accusation]").is_checked()
            assert page.locator("#field-target input[name=Daniel]").is_checked()  # the model's target
            assert not page.locator("#field-target input[name=Therapist]").is_checked()  # not the transcript's
            assert page.locator("#field-primary_speaker input[name=Maya]").is_checked()  # the transcript's speaker
            page.screenshot(path=str(shot), full_page=True)
            page.locator("[name=tone_of_voice]").fill("wistful")  # required, and no model drafted it
            with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as saved:
                page.get_by_role("button", name="Submit").click()
            assert saved.value.ok
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000

    summary = pull_annotations(project, ls_server.connection, settings=SETTINGS)
    mine = {r.field: r.value for r in read_jsonl(project.root / summary.folder / ANNOTATIONS_FILE, Annotation)
            if r.annotator == email and r.row_id == row.row_id}
    assert (mine["utterance_type"], mine["target"], mine["primary_speaker"]) == ("recollection", ["Daniel"], "Maya")
