"""Issue 22 part 2: a flag that changes what a build step makes keeps its effect (pipeline/cli/kept_flags.py).

The first tests run each command on a project whose one session cannot be ingested (its "video" is a few
bytes): the command fails at ingest, after the flag was kept or not, which is what they check. The last test
is the user's story on the real chain: the sample sessions built through the real speech stages, the real
gold-model drafting them, and a real Label Studio server (started by the build from the tests' migrated
database) that receives the gold-model drafts when `rescue push` runs next.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.annotate import server
from pipeline.annotate.labelstudio import Client
from pipeline.cli import main
from pipeline.cli.kept_flags import keep_step_flags
from pipeline.errors import RescueError
from pipeline.preannotate.drafts import SessionDrafts, drafts_path
from pipeline.project import Project
from pipeline.sample.annotators import ANNOTATORS
from pipeline.settings import SettingsOverrides, load_settings
from tests.labelstudio_fixtures import LiveServer
from tests.speech_fixtures import COUPLE, FAMILY

MINE = ('[project]\nname = "mine"\n\n# my settings, with a comment kept\n[tool.rescue.ingest]\n'
        'keyframe_interval = 5.0  # why\n')


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """One catalog session whose video is not a video: every step fails at ingest, quickly."""
    root = tmp_path / "p"
    (root / "raw_video").mkdir(parents=True)
    (root / "raw_video" / "s1.mp4").write_bytes(b"not a video")
    (root / "raw_video" / "sessions.csv").write_text(
        "session_id,scenario,participants,video,sha256\n"
        f"s1,couple,Ann;Bob,raw_video/s1.mp4,{'0' * 64}\n", encoding="utf-8")
    (root / "pyproject.toml").write_text(MINE, encoding="utf-8")
    return Project(root.resolve())


def rescue(project: Project, *args: str) -> str:
    result = CliRunner().invoke(main, ["--root", str(project.root), *args])
    assert "Traceback" not in result.output, result.output
    return result.output


def tool_rescue(project: Project) -> dict:  # type: ignore[type-arg]
    return tomllib.loads((project.root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["rescue"]


@pytest.mark.parametrize(("args", "section", "expected"), [
    (("transcribe", "--model", "large-v3", "--batch-size", "4"), "speech.asr", {"model": "large-v3", "batch_size": 4}),
    (("diarize", "--speaker-count", "free"), "speech.diarization", {"speaker_count": "free"}),
    (("preannotate", "--backend", "gold-model", "--train-gold", "gold.jsonl"), "preannotate",
     {"backend": "gold-model", "train_gold": ["gold.jsonl"]}),
    (("agree", "--bootstrap", "0", "--seed", "7"), "agreement", {"bootstrap_samples": 0, "seed": 7}),
    (("adjudicate", "--no-text"), "agreement", {"text_similarity": False}),
    (("gold", "--no-text"), "agreement", {"text_similarity": False}),
    (("freeze", "--no-media"), "build", {"release_media": False}),
])
def test_a_flag_that_changes_what_a_step_makes_is_kept_in_pyproject_and_said(
        project: Project, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], section: str,
        expected: dict) -> None:  # type: ignore[type-arg]
    monkeypatch.chdir(project.root)  # --train-gold gold.jsonl: relative to here, stored relative to the root
    output = rescue(project, *args)
    assert f"kept in pyproject.toml: [tool.rescue.{section}]" in output, output
    text = (project.root / "pyproject.toml").read_text(encoding="utf-8")
    assert text.startswith(MINE)  # the user's own lines and comments stay as they were
    table = tool_rescue(project)
    for name in section.split("."):
        table = table[name]
    assert table == expected
    assert rescue(project, *args).count("kept in") == 0  # the file says it already: nothing written again
    assert (project.root / "pyproject.toml").read_text(encoding="utf-8") == text


@pytest.mark.parametrize("args", [
    ("build", "--allow-shrink"), ("freeze", "--allow-shrink"), ("pull", "--accept-deleted"),  # permissions, once
    ("agree", "--bootstrap", "0", "--standalone"), ("gold", "--no-text", "--standalone"),  # outside the build
    ("preannotate", "--evaluate", "--backend", "gold-model", "--train-gold", "a.jsonl", "--test-gold", "b.jsonl"),
    ("transcribe", "-j", "2"),  # how this run works
])
def test_run_only_flags_and_runs_outside_the_build_leave_the_settings_file_alone(
        project: Project, args: tuple[str, ...]) -> None:
    output = rescue(project, *args)
    assert "kept in" not in output
    assert (project.root / "pyproject.toml").read_text(encoding="utf-8") == MINE


def test_an_invalid_value_is_refused_before_the_file_changes(project: Project) -> None:
    with pytest.raises(RescueError, match="speech.asr.beam_size"):
        keep_step_flags(project, SettingsOverrides.of("speech.asr", {"beam_size": 0}))
    assert (project.root / "pyproject.toml").read_text(encoding="utf-8") == MINE


def test_a_project_without_pyproject_gets_one_holding_just_the_setting(project: Project) -> None:
    (project.root / "pyproject.toml").unlink()
    overrides = keep_step_flags(project, SettingsOverrides.of("preannotate", {"backend": "openai"}))
    assert tool_rescue(project) == {"preannotate": {"backend": "openai"}}
    assert load_settings(project.root).preannotate.backend == "openai" == load_settings(
        project.root, overrides).preannotate.backend


@pytest.fixture
def corpus(built_samples: Project, labelstudio_template: Path, tmp_path: Path) -> Iterator[Project]:
    from tests.corpus_fixtures import copy_project

    project = copy_project(built_samples, tmp_path / "corpus", labelstudio_template)
    try:
        yield project
    finally:
        server.stop(server.ServerPaths.of(project))  # the build stops its own server; this is for failed tests


def test_gold_model_drafts_survive_the_next_push_and_are_what_label_studio_gets(
        corpus: Project, labelstudio_template: Path) -> None:
    from pipeline.sample.annotators import SAMPLE_NAMES, reference_labels
    from pipeline.schema import load_schema
    from tests.sample_gold import sample_session, write_gold

    schema = load_schema(corpus.schemas / "rescue-v1.yaml")
    write_gold(corpus.root / "sample_gold.jsonl",
               [sample_session(name, 0, len(reference_labels(name, schema).turns)) for name in SAMPLE_NAMES])
    # two training sessions can show a gain only with min_sessions 2; fewer resamples keep the test short
    (corpus.root / "pyproject.toml").write_text("[tool.rescue.preannotate.gate]\nmin_sessions = 2\n"
                                                "bootstrap_samples = 200\n", encoding="utf-8")
    drafted = rescue(corpus, "preannotate", "--backend", "gold-model", "--train-gold",
                     str(corpus.root / "sample_gold.jsonl"))
    assert ('kept in pyproject.toml: [tool.rescue.preannotate] backend = "gold-model", '
            'train_gold = ["sample_gold.jsonl"]') in drafted, drafted
    assert "preannotate: 2 ran" in drafted
    drafts = {sid: SessionDrafts.model_validate_json(drafts_path(corpus.build, sid).read_text())
              for sid in (COUPLE, FAMILY)}
    (version,) = {d.model_version for d in drafts.values()}
    assert version.startswith("gold-model:")
    rows = sum(len(d.rows) for d in drafts.values())
    assert (f"drafts by backend gold-model, model version {version}, trained on sample_gold.jsonl (sha256 "
            in drafted), drafted
    assert (f"{rows} row(s) drafted in 2 session(s); they reach Label Studio at the next `rescue push`"
            in drafted), drafted
    assert tool_rescue(corpus)["preannotate"]["gate"] == {"min_sessions": 2, "bootstrap_samples": 200}
    files = {sid: drafts_path(corpus.build, sid).read_bytes() for sid in drafts}

    pushed = rescue(corpus, "push")  # `rescue build --only push`: preannotate is checked on the way
    assert "preannotate: 0 ran, 2 up to date" in pushed, pushed
    assert "push: ran" in pushed and f"drafts from backend gold-model, model version {version}: 2 session(s)" in pushed
    assert {sid: drafts_path(corpus.build, sid).read_bytes() for sid in drafts} == files  # not re-drafted

    live = LiveServer(corpus, server.ServerPaths.of(corpus), labelstudio_template)
    live.start()
    try:
        client = Client(live.connection)
        seen = 0
        for scenario in ("couple", "family"):
            for annotator in ANNOTATORS:
                info = client.find_project(f"RESCUE {scenario} - rescue-v1 / {annotator}")
                assert info is not None
                assert client.project(info.id).model_version == version  # what the labelling view pre-fills
                for task in client.task_predictions(info.id):
                    assert [model for _, model in task.predictions] == [version], task
                    seen += 1
        assert seen == rows * len(ANNOTATORS)
    finally:
        server.stop(live.paths)
    again = rescue(corpus, "push")
    assert "push: up to date" in again and f"drafts from backend gold-model, model version {version}" in again
