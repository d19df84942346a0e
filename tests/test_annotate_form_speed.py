"""A whole row labelled in the real Label Studio form (headless Debian Chromium through the gateway), every field of
a client row with every list field holding its items, counted by tests/form_driver.py; pull returns exactly the
values entered, so the faster form still stores what agreement and gold read. With RESCUE_FORM_FIGURES=<file> the
counts are written there as JSON (benchmarks/bench_form.py). Screenshot: build/test-artifacts/annotate_form_row.png.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.config import build_config
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.pull import ANNOTATIONS_FILE, pull_annotations
from pipeline.annotate.push import push_rows
from pipeline.annotate.results import people_strip
from pipeline.records import Annotation
from pipeline.schema import load_schema
from pipeline.store import read_jsonl
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.browser import ARTIFACTS, BROWSER, BROWSER_ARGS, CHROMIUM, log_in
from tests.form_driver import FormDriver
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows

pytestmark = BROWSER


def test_a_whole_row_is_labelled_in_the_browser_and_counted(ls_server: LiveServer) -> None:
    from playwright.sync_api import sync_playwright

    project = ls_server.project
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, "sample/maya_and_daniel", with_clip=True)
    email = "row@example.org"
    add_annotators(project, ls_server.connection, [email])
    push_rows(project, ls_server.connection, settings=SETTINGS)
    info = ls_server.client.find_project(annotator_title(schema, "couple", email))
    assert info is not None
    row = rows[1]  # "#2 Maya: With the weekend. ..."
    task_id = ls_server.client.task_keys(info.id)[row.row_id][0]
    values = {**client_values(), "dialogue_cleaned": row.text}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "annotate_form_row.png"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(180_000)  # generous: the shared development machine can be very loaded
            log_in(page, ls_server.gateway_url, email, annotator_password(project, email))
            page.goto(f"{ls_server.gateway_url}/projects/{info.id}/data?task={task_id}")
            page.locator("#field-primary_speaker input[name=Maya]").wait_for()
            # Hotkeys only when benchmarks/bench_form.py measures: on a loaded machine Chromium twice lost a
            # kind's hotkey (no item appeared, or one too many), while clicking a kind has never failed. The
            # hotkeys themselves are checked in the config (test_annotate_config).
            driver = FormDriver(page, schema, build_config(schema, "couple"), COUPLE_ENTITIES,
                                people_strip(COUPLE_ENTITIES).strip(),
                                use_hotkeys=bool(os.environ.get("RESCUE_FORM_FIGURES")))
            try:
                # the transcript draft of dialogue_cleaned is right: an annotator leaves it as it is
                effort = driver.fill_row({k: v for k, v in values.items() if k != "dialogue_cleaned"})
            finally:
                page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()

    summary = pull_annotations(project, ls_server.connection, settings=SETTINGS)
    mine = {r.field: r.value for r in read_jsonl(project.root / summary.folder / ANNOTATIONS_FILE, Annotation)
            if r.annotator == email and r.row_id == row.row_id}
    quarantine = (project.root / summary.folder / "quarantine.jsonl").read_text(encoding="utf-8")
    assert summary.quarantined == 0, quarantine
    expected = {"start_time": row.start, "end_time": row.end, **values}
    for name in ("target",):
        mine[name] = sorted(mine[name])
        expected[name] = sorted(expected[name])
    for name, got in mine.items():
        if isinstance(got, list) and got and isinstance(got[0], dict):
            mine[name] = sorted(got, key=json.dumps)
            expected[name] = sorted(expected[name], key=json.dumps)
    assert mine == expected
    items = sum(len(v) for v in values.values() if isinstance(v, list) and v and isinstance(v[0], dict))
    assert effort.selections == items  # one name highlighted per list item, nothing else
    figures = os.environ.get("RESCUE_FORM_FIGURES")
    if figures:
        Path(figures).write_text(json.dumps({**effort.as_dict(), "items": items, "actions": effort.actions},
                                            indent=1) + "\n")
