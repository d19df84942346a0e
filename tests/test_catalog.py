"""The session catalog: parsing, validation and add-session, with every bad input named precisely."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.catalog import COLUMNS, load_catalog, parse_time
from pipeline.errors import RescueError
from pipeline.media.register import register_session
from pipeline.project import Project
from pipeline.settings import IngestSettings
from tests.media import make_video

HEADER = ",".join(COLUMNS) + "\n"
SHA = "a" * 64


def write(project: Project, text: str, name: str = "sessions.csv") -> Path:
    path = project.raw_video / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(project: Project) -> str:
    with pytest.raises(RescueError) as caught:
        load_catalog(project)
    return str(caught.value)


def test_valid_catalog_is_parsed_with_paths_relative_to_its_file(project: Project) -> None:
    write(project, HEADER + f"alan_and_evelyn/001,couple,Alan;Evelyn,videos/a.mp4,{SHA},subs/a.srt,00:01:40,250.5,S1E1\n",
          "show/sessions.csv")
    write(project, HEADER + f"family_therapy/006/merged,Family, Maria ; Nick;Joel ,f.mkv,{SHA.upper()},,,,\n")
    entries = [item.entry for item in load_catalog(project)]
    assert [e.session_id for e in entries] == ["alan_and_evelyn/001", "family_therapy/006/merged"]
    couple, family = entries
    assert couple.video == "raw_video/show/videos/a.mp4"
    assert couple.subtitles == "raw_video/show/subs/a.srt"
    assert (couple.clip_start, couple.clip_end) == (100.0, 250.5)
    assert family.participants == ("Maria", "Nick", "Joel")
    assert family.scenario == "family" and family.sha256 == SHA and family.clip_start is None


def test_time_formats() -> None:
    assert parse_time("00:01:40,000") == 100.0
    assert parse_time("1:02:03.5") == 3723.5
    assert parse_time("01:40") == 100.0
    assert parse_time(" 12.25 ") == 12.25
    with pytest.raises(ValueError):
        parse_time("ten")


def test_duplicate_session_id_names_both_places(project: Project) -> None:
    write(project, HEADER + f"s1,couple,A;B,a.mp4,{SHA},,,,\n")
    write(project, HEADER + f"x,couple,A;B,b.mp4,{SHA},,,,\ns1,couple,C;D,c.mp4,{SHA},,,,\n", "more/sessions.csv")
    message = error_of(project)
    assert "'s1' is listed twice" in message
    assert "raw_video/more/sessions.csv:3" in message and "raw_video/sessions.csv:2" in message


@pytest.mark.parametrize("video", ["../outside.mp4", "a/../../outside.mp4", "/etc/passwd"])
def test_video_path_may_not_escape_raw_video(project: Project, video: str) -> None:
    write(project, HEADER + f"s1,couple,A;B,{video},{SHA},,,,\n")
    message = error_of(project)
    assert "raw_video/sessions.csv:2" in message and "video" in message
    assert "escapes raw_video/" in message or "absolute path" in message


@pytest.mark.parametrize("session_id", ["../evil", "/abs", "a/../../b", "a//b", "a/..", "bad id"])
def test_session_id_may_not_escape_build(project: Project, session_id: str) -> None:
    write(project, HEADER + f"{session_id},couple,A;B,a.mp4,{SHA},,,,\n")
    message = error_of(project)
    assert "raw_video/sessions.csv:2" in message and "session_id" in message


def test_non_utf8_catalog_names_file_and_line(project: Project) -> None:
    path = project.raw_video / "sessions.csv"
    path.write_bytes((HEADER + f"s1,couple,A;B,a.mp4,{SHA},,,,\n").encode() + "s2,couple,Zoë;B,b.mp4,x,,,,\n".encode("latin-1"))
    message = error_of(project)
    assert "sessions.csv: line 3 is not UTF-8" in message and "UTF-8" in message


@pytest.mark.parametrize(("text", "expected"), [
    ("session_id,scenario,video\ns1,couple,a.mp4\n", "missing column(s) participants, sha256"),
    (HEADER.strip() + ",colour\n", "unknown column(s) colour"),
    (HEADER + f"s1,couple,A;B,a.mp4,{SHA}\n", "sessions.csv:2: expected 9 fields"),
    (HEADER + f"s1,couple,A;B,a.mp4,{SHA},,,,,extra\n", "sessions.csv:2: expected 9 fields"),
    (HEADER + f"s1,triad,A;B,a.mp4,{SHA},,,,\n", "sessions.csv:2: scenario"),
    (HEADER + "s1,couple,A;B,a.mp4,not-a-hash,,,,\n", "sessions.csv:2: sha256"),
    (HEADER + f"s1,couple,A;Therapist,a.mp4,{SHA},,,,\n", "Therapist is a reserved label"),
    (HEADER + f"s1,couple,A;A,a.mp4,{SHA},,,,\n", "participant names repeat"),
    (HEADER + f"s1,couple,,a.mp4,{SHA},,,,\n", "participants"),
    (HEADER + f"s1,couple,A;B,a.mp4,{SHA},,20,10,\n", "clip_end (10.0) must be after clip_start (20.0)"),
    (HEADER + f"s1,couple,A;B,a.mp4,{SHA},,20,,\n", "give both clip_start and clip_end"),
    (HEADER + f"s1,couple,A;B,a.mp4,{SHA},,abc,10,\n", "sessions.csv:2: clip time is not a number"),
])
def test_malformed_catalog_is_reported_with_file_and_line(project: Project, text: str, expected: str) -> None:
    write(project, text)
    assert expected in error_of(project)


def test_add_session_hashes_and_appends_without_touching_existing_lines(project: Project) -> None:
    existing = HEADER + f"old,couple,A;B,old.mp4,{SHA},,,,\"kept, as written\"\n"
    write(project, existing)
    video = make_video(project.raw_video / "new" / "v.mp4", 3.0)
    entry = register_session(project, video=video, session_id="new/v", scenario="family",
                             participants=["Ann", "Bo", "Cy"], settings=IngestSettings())
    text = (project.raw_video / "sessions.csv").read_text(encoding="utf-8")
    assert text.startswith(existing)
    assert [item.entry for item in load_catalog(project)][0] == entry
    assert entry.video == "raw_video/new/v.mp4" and len(entry.sha256) == 64


def test_add_session_refuses_duplicates_and_leaves_the_catalog_unchanged(project: Project) -> None:
    video = make_video(project.raw_video / "v.mp4", 2.0)
    register_session(project, video=video, session_id="s1", scenario="couple", participants=["A", "B"],
                     settings=IngestSettings())
    before = (project.raw_video / "sessions.csv").read_bytes()
    with pytest.raises(RescueError, match=r"'s1' already exists in raw_video/sessions.csv:2"):
        register_session(project, video=video, session_id="s1", scenario="couple", participants=["A", "B"],
                         settings=IngestSettings())
    assert (project.raw_video / "sessions.csv").read_bytes() == before


def test_add_session_refuses_files_outside_raw_video(project: Project, tmp_path: Path) -> None:
    outside = make_video(tmp_path / "elsewhere.mp4", 2.0)
    with pytest.raises(RescueError, match="outside .*raw_video"):
        register_session(project, video=outside, session_id="s1", scenario="couple", participants=["A", "B"],
                         settings=IngestSettings())
    with pytest.raises(RescueError, match="outside .*raw_video"):
        register_session(project, video=project.raw_video / ".." / "elsewhere.mp4", session_id="s1",
                         scenario="couple", participants=["A", "B"], settings=IngestSettings())
    assert not (project.raw_video / "sessions.csv").exists()


@pytest.mark.parametrize(("clip", "settings", "expected"), [
    ((1.0, 9.0), IngestSettings(min_clip_seconds=0), r"ends after the media \(4\.0"),
    ((0.5, 2.5), IngestSettings(), r"shorter than min_clip_seconds \(120 s"),
])
def test_add_session_checks_clip_boundaries(project: Project, clip: tuple[float, float],
                                            settings: IngestSettings, expected: str) -> None:
    video = make_video(project.raw_video / "v.mp4", 4.0)
    with pytest.raises(RescueError, match=expected):
        register_session(project, video=video, session_id="s1", scenario="couple", participants=["A", "B"],
                         settings=settings, clip=clip)
    assert not (project.raw_video / "sessions.csv").exists()


def test_add_session_refuses_video_without_audio(project: Project) -> None:
    video = make_video(project.raw_video / "mute.mp4", 2.0, audio=False)
    with pytest.raises(RescueError, match="has no audio stream"):
        register_session(project, video=video, session_id="s1", scenario="couple", participants=["A", "B"],
                         settings=IngestSettings())


def test_therapist_column_says_a_session_has_no_therapist(project: Project) -> None:
    """Optional column: empty / yes = a therapist speaks (the default); no = only the participants speak."""
    write(project, HEADER.strip() + ",therapist\n" + f"a,couple,A;B,a.mp4,{SHA},,,,,no\n"
          + f"b,couple,A;B,b.mp4,{SHA},,,,,\nc,couple,A;B,c.mp4,{SHA},,,,,Yes\n")
    entries = {item.entry.session_id: item.entry for item in load_catalog(project)}
    assert [entries[k].therapist for k in "abc"] == [False, True, True]
    # without the column every session has a therapist, and old catalogs' entries dump (and fingerprint) as before
    write(project, HEADER + f"d,couple,A;B,d.mp4,{SHA},,,,\n", "old/sessions.csv")
    old = next(item.entry for item in load_catalog(project) if item.entry.session_id == "d")
    assert old.therapist and "therapist" not in old.model_dump()
    assert entries["a"].model_dump()["therapist"] is False


def test_bad_therapist_value_names_file_and_line(project: Project) -> None:
    write(project, HEADER.strip() + ",therapist\n" + f"a,couple,A;B,a.mp4,{SHA},,,,,maybe\n")
    message = error_of(project)
    assert "sessions.csv:2" in message and "therapist" in message and "'maybe'" in message


def test_catalog_with_therapist_column_round_trips_and_appends(project: Project) -> None:
    from pipeline.catalog import render_catalog

    write(project, HEADER.strip() + ",therapist\n" + f"a,couple,A;B,a.mp4,{SHA},,,,,no\n")
    video = make_video(project.raw_video / "v.mp4", 2.0)
    register_session(project, video=video, session_id="v", scenario="couple", participants=["A", "B"],
                     settings=IngestSettings())
    entries = [item.entry for item in load_catalog(project)]
    assert [(e.session_id, e.therapist) for e in entries] == [("a", False), ("v", True)]
    path = project.raw_video / "sessions.csv"
    assert [item.entry for item in load_catalog(project)] == entries
    path.write_text(render_catalog(project, path, entries), encoding="utf-8")
    assert [item.entry for item in load_catalog(project)] == entries
