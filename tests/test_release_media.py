"""Media in the release (issue 13, item 1): the clips ER, VP and SSP attach, packed under media/, hashed in
the manifest and checked by `rescue verify`.

The clips are the real ones the transcripts stage cut with ffmpeg for the two built-in sample sessions
(`built_samples`: real WhisperX, pyannote and ffmpeg). The gold rows are made here from those sessions'
transcript rows: the same session, row index and times (as the gold step writes them), with labels chosen
by the test, so which rows become ER/VP/SSP instances never depends on what the models heard. Only the row
count and times come from the models, and the tests assert invariants over them, never ids or times.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.catalog import load_catalog
from pipeline.cli import main
from pipeline.engine.context import StepContext
from pipeline.corpus.release_step import freeze_step
from pipeline.engine.state import write_state
from pipeline.store import StepRun as StepState
from pipeline.project import Project
from pipeline.schema import load_schema
from pipeline.tasks import modes
from pipeline.tasks.settings import DEFAULT_TASK_SETTINGS, load_task_settings, schema_path
from pipeline.transcripts import read_rows
from tests.conftest import tree_digest
from tests.release_inputs import gold_sessions as hand_made_sessions
from tests.release_inputs import write_gold

REPO = Path(__file__).resolve().parents[1]
LONG = "I keep telling you the same thing again and again"
SCHEMA = load_schema(schema_path(load_task_settings(), DEFAULT_TASK_SETTINGS))


def gold_record(project: Project, session_id: str, scenario: str, participants: tuple[str, ...]) -> dict[str, Any]:
    """Gold rows on the session's transcript rows: odd rows the therapist (with a strategy), even rows a
    client (with an emotion and a viewpoint). Row 1 is a therapist row, so its SSP instance has no context."""
    therapist, strategy = SCHEMA.therapist, SCHEMA.labels("support_strategy", scenario)[0]
    rows = []
    for row in read_rows(project, session_id):
        i = row.row_index
        client = participants[(i // 2) % len(participants)]
        other = next((p for p in participants if p != client), therapist)
        base = {"start_time": row.start, "end_time": row.end, "dialogue_cleaned": LONG, "row_index": i,
                "tone_of_voice": f"tone {i}"}
        if i % 2:
            rows.append({**base, "primary_speaker": therapist, "target": [client],
                         "support_strategy": [{"provider": therapist, "target": [client], "strategy_type": strategy,
                                               "strategy_content": "reflects"}]})
        else:
            rows.append({**base, "primary_speaker": client, "target": [therapist],
                         "internal_emotion": [{"person": client, "emotion_description": "feels tense",
                                               "intensity": 5}],
                         "viewpoints_attitudes": [{"source": client, "target": other, "viewpoint": "never listens",
                                                   "attitude": "hurt"}]})
    return {"sample_id": session_id, "scenario": scenario, "participants": list(participants), "rows": rows}


def write_media_gold(project: Project, path: Path) -> Path:
    records = [gold_record(project, item.entry.session_id, item.entry.scenario, item.entry.participants)
               for item in load_catalog(project)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def run(project: Project, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["--root", str(project.root), *args])


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def media_project(built_samples: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A copy of the built samples with a gold file on their rows and a release frozen with --media."""
    root = tmp_path_factory.mktemp("media") / "project"
    shutil.copytree(built_samples.root, root, symlinks=True)
    project = Project(root.resolve())
    gold = write_media_gold(project, project.root / "gold.jsonl")
    result = run(project, "freeze", "--gold", str(gold), "--media")
    assert result.exit_code == 0, result.output
    assert "media:" in result.output
    return project


def release_of(project: Project) -> Path:
    return project.build / "release" / "v1"


def transcript_clip(project: Project, session_id: str, row_index: int) -> Path:
    (row,) = [r for r in read_rows(project, session_id) if r.row_index == row_index]
    assert row.clip is not None
    return project.abs(row.clip)


def test_a_media_release_verifies_and_lists_every_clip_in_the_manifest(media_project: Project) -> None:
    release = release_of(media_project)
    result = run(media_project, "verify", str(release))
    assert result.exit_code == 0, result.output
    manifest = json.loads((release / "MANIFEST.json").read_text())
    listed = {e["path"]: e for e in manifest["files"] if e["path"].startswith("media/")}
    on_disk = {p.relative_to(release).as_posix() for p in (release / "media").rglob("*") if p.is_file()}
    assert listed and set(listed) == on_disk and manifest["media"]["clips"] == len(listed)
    for path, entry in listed.items():
        assert entry["sha256"] == sha(release / path) and entry["bytes"] == (release / path).stat().st_size
    families = {item.entry.session_id for item in load_catalog(media_project) if item.entry.scenario == "family"}
    assert families and any(path.split("/")[1:-1] == family.split("/") for path in listed for family in families)
    card = (release / "README.md").read_text()
    assert "## Input modes and media" in card and "`turn_video_audio`" in card and f"({len(listed)} MP4 clips" in card


def test_verify_names_a_removed_clip_and_a_changed_clip(media_project: Project, tmp_path: Path) -> None:
    release = tmp_path / "v1"
    shutil.copytree(release_of(media_project), release)  # copies: the build's clips stay untouched
    first, second = sorted(p.relative_to(release).as_posix() for p in (release / "media").rglob("*.mp4"))[:2]
    (release / first).unlink()
    with (release / second).open("ab") as handle:
        handle.write(b"\0")
    result = run(media_project, "verify", str(release))
    assert result.exit_code == 1
    assert f"missing {first}" in result.output and f"changed {second}: sha256" in result.output
    report = json.loads(run(media_project, "verify", str(release), "--json").output)
    assert report["missing"] == [first] and [c["path"] for c in report["changed"]] == [second]


def test_er_and_vp_attach_their_context_clips_then_their_own(media_project: Project) -> None:
    release = release_of(media_project)
    seen = 0
    for task in ("er", "vp"):
        for record in jsonl(release / "tasks" / f"{task}.jsonl"):
            sid, own = record["sample_id"], record["row_index"]
            context = record["prior_context"]
            assert [r["row_index"] for r in context] == list(range(1, own))  # context -1: every earlier row
            expected = [f"media/{sid}/{i:03d}.mp4" for i in range(1, own + 1)]
            assert record["video_attachments"] == expected
            assert [r["clip_path"] for r in context] + [record["clip_path"]] == expected
            assert [r["video_attachment_index"] for r in context] == list(range(1, own))
            assert record["video_attachment_index"] == own
            for path, row_index in zip(expected, range(1, own + 1), strict=True):
                assert sha(release / path) == sha(transcript_clip(media_project, sid, row_index))
            rows = {r.row_index: r for r in read_rows(media_project, sid)}
            for r in [*context, record]:
                span = rows[r["row_index"]].end - rows[r["row_index"]].start
                assert 0 < r["clip_duration_sec"] <= round(max(span, 0.05), 3) + 0.001
            assert modes.in_mode(task, record, "turn_video_audio")
            seen += 1
    assert seen >= 4


def test_ssp_attaches_context_clips_only_and_an_instance_without_context_has_none(media_project: Project) -> None:
    records = jsonl(release_of(media_project) / "tasks" / "ssp.jsonl")
    assert records
    for record in records:
        sid, own = record["sample_id"], record["row_index"]
        window = list(range(max(1, own - 3), own))  # SSP context: 3 rows
        assert [r["row_index"] for r in record["prior_context"]] == window
        assert record["video_attachments"] == [f"media/{sid}/{i:03d}.mp4" for i in window]
        assert [r["video_attachment_index"] for r in record["prior_context"]] == list(range(1, len(window) + 1))
        assert "clip_path" not in record and "video_attachment_index" not in record  # its own row: the answer
    first_rows = [r for r in records if r["row_index"] == 1]
    assert len(first_rows) == 2  # row 1 of each sample is a therapist row without context
    for record in first_rows:
        assert record["video_attachments"] == [] and not modes.in_mode("ssp", record, "turn_video_audio")
        assert modes.in_mode("ssp", record, "dialogue")


def test_text_tasks_carry_no_media_and_the_loader_reads_paths(media_project: Project, tmp_path: Path) -> None:
    import datasets

    release = release_of(media_project)
    for task in ("rpp", "itp", "stp"):
        text = (release / "tasks" / f"{task}.jsonl").read_text()
        assert "clip_path" not in text and "video_attachments" not in text
    for task in ("er", "vp", "ssp"):
        # a private cache: the shared one can hand back another folder's release of the same name
        loaded = datasets.load_dataset(str(release), task, split="test", cache_dir=str(tmp_path)).to_list()
        assert loaded == jsonl(release / "tasks" / f"{task}.jsonl"), task
        assert all(isinstance(p, str) for r in loaded for p in r["video_attachments"])


def test_clips_are_hard_linked_where_the_file_system_allows(media_project: Project) -> None:
    release = release_of(media_project)
    for record in jsonl(release / "tasks" / "er.jsonl"):
        packed = release / record["clip_path"]
        source = transcript_clip(media_project, record["sample_id"], record["row_index"])
        assert os.path.samefile(packed, source)


def test_clips_are_copied_when_a_hard_link_fails(media_project: Project, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def cross_device(source: object, target: object) -> None:
        # simulates a build folder on another device than the release (os.link fails with EXDEV there)
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    out = tmp_path / "v1"
    result = run(media_project, "freeze", "--gold", str(media_project.root / "gold.jsonl"), "--media",
                 "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "0 hard-linked" in result.output
    assert tree_digest(out) == tree_digest(release_of(media_project))  # the same release, byte for byte
    for record in jsonl(out / "tasks" / "vp.jsonl"):
        packed = out / record["clip_path"]
        assert not os.path.samefile(packed, transcript_clip(media_project, record["sample_id"], record["row_index"]))
    assert run(media_project, "verify", str(out)).exit_code == 0


def test_a_text_only_release_is_the_release_made_without_media(media_project: Project, tmp_path: Path) -> None:
    from pipeline.tasks.freeze_gold import ReleaseDefaults, freeze_gold, read_gold_input
    from pipeline.settings import load_settings

    gold = media_project.root / "gold.jsonl"
    plain, off = tmp_path / "plain" / "v1", tmp_path / "off" / "v1"
    assert run(media_project, "freeze", "--gold", str(gold), "--out", str(plain)).exit_code == 0
    assert run(media_project, "freeze", "--gold", str(gold), "--no-media", "--out", str(off)).exit_code == 0
    given = read_gold_input(media_project, gold)
    library = tmp_path / "library" / "v1"
    freeze_gold(media_project, given, ReleaseDefaults.of(load_settings(media_project.root)), snapshots=(), models=(),
                out=library, overwrite=False)  # the call as it was before media existed
    assert tree_digest(plain) == tree_digest(off) == tree_digest(library)
    assert not (plain / "media").exists()
    assert "media" not in json.loads((plain / "MANIFEST.json").read_text())
    for path in plain.rglob("*.jsonl"):
        assert "clip_path" not in path.read_text() and "video_attachments" not in path.read_text()
    assert "Input modes and media" not in (plain / "README.md").read_text()


def test_media_from_a_published_gold_file_is_a_clear_error(project: Project) -> None:
    published = write_gold(project.root / "published.jsonl", hand_made_sessions())
    result = run(project, "freeze", "--gold", str(published), "--media")
    assert result.exit_code != 0
    assert "has no transcript rows in this project" in result.output and "--no-media" in result.output
    assert not (project.build / "release" / "v1").exists()


def test_a_gold_row_whose_times_differ_from_its_transcript_row_is_named(media_project: Project,
                                                                        tmp_path: Path) -> None:
    records = jsonl(media_project.root / "gold.jsonl")
    records[0]["rows"][1]["start_time"] += 0.5
    moved = tmp_path / "moved.jsonl"
    moved.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = run(media_project, "freeze", "--gold", str(moved), "--media", "--out", str(tmp_path / "v1"))
    assert result.exit_code != 0
    assert f"gold sample {records[0]['sample_id']} row 2 spans" in result.output
    assert "its clip would show other speech" in result.output and "--no-media" in result.output


def test_the_build_step_refreezes_when_a_clip_changes_or_the_setting_flips(built_samples: Project,
                                                                          tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(built_samples.root, root, symlinks=True)
    project = Project(root.resolve())
    shutil.copytree(REPO / "annotation_schemas", project.schemas, dirs_exist_ok=True)
    settings = "[tool.rescue.agreement]\ntext_similarity = false\n"
    (project.root / "pyproject.toml").write_text(settings)
    write_state(project, StepState(step="pull", status="done", detail={"snapshot": "20261130T100000Z"}))
    write_media_gold(project, project.build / "gold" / "benchmark.jsonl")

    def freeze() -> str:
        ctx = StepContext.load(project)
        freeze_step(ctx)
        (outcome,) = ctx.outcomes
        return f"{outcome.status} - {outcome.message}"

    release = release_of(project)
    said = freeze()
    assert said.startswith("ran") and "hard-linked" in said and (release / "media").is_dir()
    assert freeze().startswith("up to date")

    clip = transcript_clip(project, "sample/maya_and_daniel", 2)
    replaced = clip.with_suffix(".new")
    replaced.write_bytes(clip.read_bytes() + b"\0")  # a re-cut clip: a new file renamed into place
    os.replace(replaced, clip)
    assert freeze().startswith("ran")
    packed = release / "media" / "sample/maya_and_daniel" / "002.mp4"
    assert sha(packed) == sha(clip)
    assert freeze().startswith("up to date")

    (project.root / "pyproject.toml").write_text(settings + "[tool.rescue.build]\nrelease_media = false\n")
    said = freeze()
    assert said.startswith("ran") and not (release / "media").exists()
    assert freeze().startswith("up to date")


def test_a_model_run_in_the_video_mode_sends_the_release_clips_and_is_scored(
        media_project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end on a release frozen with media: `rescue run-model` in turn_video_audio sends each SSP
    instance's context clips (the packed bytes, in attach order) and `rescue evaluate --run` scores the run
    over the instances in that mode. tests/chat_server.py stands in for the remote model (no endpoint is
    reachable from test machines); it answers with the gold strategy for every other instance."""
    import base64

    from tests.chat_server import ChatServer, Received, Reply

    release = release_of(media_project)
    records = {r["id"]: r for r in jsonl(release / "tasks" / "ssp.jsonl")}
    gold = {r["id"]: r["gold"]["strategy_label"] for r in jsonl(release / "gold" / "ssp.jsonl")}
    taking = sorted(i for i, r in records.items() if r["video_attachments"])
    right = set(taking[::2])
    sent: dict[str, list[bytes]] = {}

    def respond(received: Received) -> Reply:
        content = received.body["messages"][-1]["content"]
        text = next(i["text"] for i in content if i["type"] == "text")
        (target,) = json.loads(text.split("\n\n", 1)[1])["targets"]
        turn = target["turn_id"]
        sent[turn] = [base64.b64decode(i["video_url"]["url"].split(",", 1)[1]) for i in content
                      if i["type"] == "video_url"]
        label = gold[turn] if turn in right else next(x for x in SCHEMA.labels("support_strategy", "couple")
                                                      if x != gold[turn])
        return Reply(content=json.dumps({"sample_id": records[turn]["sample_id"],
                                         "predictions": [{"turn_id": turn, "strategy_top3": [label]}]}))

    if not (media_project.root / "annotation_schemas").exists():  # run-model reads the project's schema
        shutil.copytree(REPO / "annotation_schemas", media_project.root / "annotation_schemas")
    monkeypatch.setenv("RESCUE_TEST_MEDIA_RUN_KEY", "sk-test-media-run-0000")
    with ChatServer(respond, api_key="sk-test-media-run-0000") as server:
        ran = run(media_project, "run-model", "--task", "ssp", "--mode", "turn_video_audio", "--release",
                  str(release), "--model", "stand-in", "--base-url", server.base_url,
                  "--api-key-env", "RESCUE_TEST_MEDIA_RUN_KEY", "--out", str(tmp_path / "run"))
        assert ran.exit_code == 0, ran.output
        assert not server.errors
    assert sorted(sent) == taking  # the instances without a context clip were not sent
    for turn in taking:
        assert sent[turn] == [(release / p).read_bytes() for p in records[turn]["video_attachments"]]
    scored = run(media_project, "evaluate", "--run", str(tmp_path / "run"), "--release", str(release))
    assert scored.exit_code == 0, scored.output
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["mode"] == "turn_video_audio"
    overall = scores["scores"]["overall"]  # over the instances in this mode: the left-out ones are not misses
    assert overall["instances"] == len(taking) and scores["left_out_by_mode"] == len(records) - len(taking) > 0
    assert overall["recall_at_1"] == round(len(right) / len(taking), 4)  # reports keep 4 decimals

