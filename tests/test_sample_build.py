"""The main job on the built-in sample: `rescue sample` then `rescue build`, as `make demo` runs it."""

from __future__ import annotations

import wave

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.project import Project
from pipeline.records import SampleTruth, SessionMedia
from pipeline.store import read_jsonl


def test_sample_sessions_are_catalogued_and_ingested(sample_project: Project) -> None:
    runner = CliRunner()
    again = runner.invoke(main, ["--root", str(sample_project.root), "sample"])
    assert again.exit_code == 0 and "already present" in again.output

    # Only ingest: the speech stages are covered by the speech tests (and `built_samples`), the corpus steps
    # (Label Studio .. release) by tests/test_corpus_build.py; the whole speech work here took half a minute.
    built = runner.invoke(main, ["--root", str(sample_project.root), "build", "--no-annotation", "--only", "ingest"])
    assert built.exit_code == 0, built.output
    assert "ingest: 2 ran" in built.output

    media = {m.session_id: m for m in read_jsonl(sample_project.build / "manifests" / "ingest.jsonl", SessionMedia)}
    assert sorted(media) == ["sample/linda_mark_and_zoe", "sample/maya_and_daniel"]
    for truth_file in sorted(sample_project.raw_video.glob("sample/*.truth.json")):
        truth = SampleTruth.model_validate_json(truth_file.read_text())
        facts = media[truth.session_id]
        assert facts.participants == truth.participants and facts.scenario == truth.scenario
        assert facts.subtitles == f"raw_video/sample/{truth_file.name.removesuffix('.truth.json')}.srt"
        assert facts.duration == pytest.approx(truth.duration, abs=0.15)
        with wave.open(str(sample_project.abs(facts.audio))) as wav:
            assert wav.getnframes() / wav.getframerate() == pytest.approx(truth.duration, abs=0.15)
        assert len(facts.keyframes) == int(truth.duration // 10) + (truth.duration % 10 > 5)

    rebuilt = runner.invoke(main, ["--root", str(sample_project.root), "build", "--no-annotation", "--only", "ingest"])
    assert "Nothing to do" in rebuilt.output


def test_damaged_sample_is_remade(sample_project: Project) -> None:
    video = sample_project.raw_video / "sample" / "maya_and_daniel.mp4"
    video.write_bytes(b"broken")
    result = CliRunner().invoke(main, ["--root", str(sample_project.root), "sample"])
    assert result.exit_code == 0 and "sample sessions made" in result.output
    assert video.stat().st_size > 100_000
