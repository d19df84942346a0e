"""The model-free parts of the speech stages: row cutting, word assignment, overlap, window linking,
settings resolution and overrides, streamed audio windows."""

from __future__ import annotations

import subprocess
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pipeline.records import Word
from pipeline.settings import load_settings
from pipeline.speech import audio as wav
from pipeline.speech.assign import assign_words, others_overlap
from pipeline.speech.diarize import link_windows, overlap_seconds, speaker_bounds
from pipeline.speech.records import SpeakerTurn
from pipeline.speech.rows import Unit, build_rows, group_units
from pipeline.speech.settings import AsrSettings, DiarizationSettings, RowSettings, resolve_asr, resolve_diarization

ROWS = RowSettings()


def _unit(start: float, end: float, text: str, speaker: str = "Maya", label: str = "A") -> Unit:
    return Unit(start, end, text, speaker, label, Word(text=text, start=start, end=end, speaker_label=label))


def test_new_row_on_speaker_change_and_long_pause() -> None:
    units = [_unit(0.0, 0.4, "Hi."), _unit(0.5, 0.9, "there."), _unit(1.0, 1.5, "Yes.", "Daniel", "B"),
             _unit(1.6, 2.0, "Well.", "Daniel", "B"), _unit(4.0, 4.5, "Later.", "Daniel", "B")]
    groups = group_units(units, ROWS)
    assert [[u.text for u in g] for g in groups] == [["Hi.", "there."], ["Yes.", "Well."], ["Later."]]


def test_long_monologue_splits_at_sentence_ends_under_the_maximum() -> None:
    words, t = [], 0.0
    for sentence in range(8):  # 8 sentences of 10 words, 0.5 s per word: 5 s each, 40 s in all
        for index in range(10):
            text = "word." if index == 9 else "word"
            words.append(_unit(t, t + 0.45, text))
            t += 0.5
    groups = group_units(words, RowSettings(max_row_seconds=12.0))
    assert [len(g) for g in groups] == [20, 20, 20, 20]
    assert all(g[-1].text.endswith(".") and g[-1].end - g[0].start <= 12.0 for g in groups)


def test_sentence_longer_than_the_maximum_splits_at_its_widest_pause() -> None:
    words = [_unit(i * 0.5, i * 0.5 + 0.4, "w") for i in range(10)]
    words += [_unit(6.0 + i * 0.5, 6.4 + i * 0.5, "w") for i in range(10)]  # a 1 s pause at 5.0 -> 6.0
    groups = group_units(words, RowSettings(max_row_seconds=8.0, max_pause=2.0))
    assert [len(g) for g in groups] == [10, 10]


def test_rows_get_ids_indices_and_overlap_marks() -> None:
    turns = [SpeakerTurn(start=0.0, end=3.0, label="A"), SpeakerTurn(start=2.0, end=2.9, label="B"),
             SpeakerTurn(start=3.2, end=5.0, label="B")]
    units = [_unit(0.1, 1.0, "One"), _unit(1.1, 2.5, "two."), _unit(3.3, 4.8, "Three.", "Daniel", "B")]
    rows = build_rows("s/1", units, turns, ROWS)
    assert [(r.row_index, r.speaker, r.text, r.overlap) for r in rows] == [
        (1, "Maya", "One two.", True), (2, "Daniel", "Three.", False)]
    assert rows[0].row_id == "s/1@000000100-000002500"
    assert others_overlap(0.0, 3.0, "A", turns) == pytest.approx(0.9)


def test_row_edges_snap_to_the_speakers_turn_inside_the_edge_words() -> None:
    turns = [SpeakerTurn(start=1.2, end=3.7, label="A")]
    rows = build_rows("s", [_unit(0.8, 1.5, "Early"), _unit(3.0, 4.0, "late.")], turns, ROWS)
    assert (rows[0].start, rows[0].end) == (1.2, 3.7)


def test_identical_spans_get_distinct_row_ids() -> None:
    a = Unit(1.0, 2.0, "Hi.", "Maya", "")
    b = Unit(1.0, 2.0, "Hey.", "Daniel", "")
    rows = build_rows("s", [a, b], [], ROWS)
    assert len({r.row_id for r in rows}) == 2 and all(r.overlap for r in rows)


def test_words_go_to_the_most_overlapping_then_nearest_turn() -> None:
    turns = [SpeakerTurn(start=0.0, end=1.0, label="A"), SpeakerTurn(start=0.8, end=2.0, label="B"),
             SpeakerTurn(start=5.0, end=6.0, label="C")]
    words = [Word(text=t, start=s, end=e) for t, s, e in
             [("a", 0.1, 0.5), ("ab", 0.7, 1.5), ("gap", 2.2, 2.4), ("far", 3.3, 3.4), ("c", 5.1, 5.2)]]
    assigned, far = assign_words(words, turns)
    assert [w.speaker_label for w in assigned] == ["A", "B", "B", "B", "C"]
    assert far == 1  # 'far' is 1.3 s from the nearest turn
    assert assign_words(words, []) == ([w.model_copy(update={"speaker_label": None}) for w in words], 5)


def test_overlap_seconds_counts_simultaneous_speech_once() -> None:
    turns = [SpeakerTurn(start=0, end=4, label="A"), SpeakerTurn(start=1, end=2, label="B"),
             SpeakerTurn(start=1.5, end=3, label="C")]
    assert overlap_seconds(turns) == 2.0


def test_window_labels_link_by_embedding_within_bounds() -> None:
    rng = np.random.default_rng(0)
    voices = rng.normal(size=(3, 16))
    windows = [{"X": voices[0] + 0.01, "Y": voices[1]}, {"P": voices[1] + 0.02, "Q": voices[0], "R": voices[2]}]
    ids = link_windows(windows, 0.5, (None, 3, 5))
    assert ids[(0, "X")] == ids[(1, "Q")] and ids[(0, "Y")] == ids[(1, "P")]
    assert len(set(ids.values())) == 3
    assert len(set(link_windows(windows, 0.5, (2, None, None)).values())) == 2


def test_speaker_bounds_follow_the_setting() -> None:
    assert speaker_bounds(3, DiarizationSettings(speaker_count="exact")) == (3, None, None)
    assert speaker_bounds(3, DiarizationSettings()) == (None, 3, 5)
    assert speaker_bounds(3, DiarizationSettings(speaker_count="free")) == (None, None, None)


def test_auto_settings_resolve_for_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.speech.settings as speech_settings

    monkeypatch.setattr(speech_settings, "cuda_available", lambda: False)
    assert resolve_asr(AsrSettings()).model_dump(include={"model", "device", "compute_type"}) == \
        {"model": "tiny.en", "device": "cpu", "compute_type": "int8"}
    monkeypatch.setattr(speech_settings, "cuda_available", lambda: True)
    assert resolve_asr(AsrSettings()).model_dump(include={"model", "device", "compute_type"}) == \
        {"model": "large-v3", "device": "cuda", "compute_type": "float16"}
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert resolve_diarization(DiarizationSettings()).pipeline == "embedded"
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    assert resolve_diarization(DiarizationSettings()).pipeline == "pyannote/speaker-diarization-community-1"


def test_settings_file_and_environment_overrides(tmp_path: Path) -> None:
    from pipeline.cli.options import environment_overrides  # the `rescue` command reads RESCUE_* at its edge

    (tmp_path / "pyproject.toml").write_text('[tool.rescue.speech]\nsource = "auto"\n[tool.rescue.speech.asr]\n'
                                             'model = "base"\nbatch_size = 4\n', encoding="utf-8")
    settings = load_settings(tmp_path).speech
    assert (settings.source, settings.asr.model, settings.asr.batch_size) == ("auto", "base", 4)
    environment = {"RESCUE_ASR_BATCH_SIZE": "2", "RESCUE_DIARIZATION_SPEAKER_COUNT": "exact"}
    settings = load_settings(tmp_path, environment_overrides(environment)).speech
    assert settings.asr.batch_size == 2 and settings.asr.model == "base"
    assert settings.diarization.speaker_count == "exact"


@pytest.mark.slow  # the real speech models, run by the test itself
def test_windows_are_cut_at_quiet_points_and_read_in_bounded_memory(tmp_path: Path) -> None:
    """A 2-hour WAV (230 MB on disk): planning windows and checking loudness stream it in small blocks."""
    path = tmp_path / "long.wav"
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", str(path), "synth", "7200", "sine", "300",
                    "vol", "0.1", "pad", "0", "0"], check=True)
    tracemalloc.start()
    spans = wav.plan_windows(path, 600.0)
    level = wav.loudest_dbfs(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 * 2**20  # a whole-file float32 read would need ~460 MB
    assert len(spans) >= 12 and spans[0][0] == 0.0 and spans[-1][1] == pytest.approx(7200.0)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])) and all(e - s <= 600.0 for s, e in spans)
    assert -25 < level < -15


def _turns(*spans: tuple[float, float, str]) -> list[SpeakerTurn]:
    return [SpeakerTurn(start=s, end=e, label=label) for s, e, label in spans]


def test_a_session_without_therapist_expects_only_its_participants() -> None:
    from pipeline.records import CatalogEntry
    from pipeline.speech.diarize import catalog_speakers
    from pipeline.speech.mapping import allowed_names

    common = dict(session_id="s", scenario="couple", participants=("Ann", "Bob"), video="raw_video/s.mp4",
                  sha256="a" * 64)
    alone, treated = CatalogEntry(**common, therapist=False), CatalogEntry(**common)
    assert catalog_speakers(alone) == 2 and allowed_names(alone) == ("Ann", "Bob")
    assert catalog_speakers(treated) == 3 and allowed_names(treated) == ("Ann", "Bob", "Therapist")
    assert speaker_bounds(catalog_speakers(alone), DiarizationSettings()) == (None, 2, 4)


def test_a_small_label_next_to_another_is_flagged_as_a_likely_split() -> None:
    from pipeline.speech.speaker_evidence import likely_splits

    # A and B alternate; C speaks twice, each time right after A, for 3 s of A's 40 s
    turns = _turns((0, 10, "A"), (10, 11.5, "C"), (12, 22, "B"), (22, 32, "A"), (32, 33.5, "C"), (34, 54, "B"),
                   (54, 74, "A"))
    warnings = likely_splits(turns, 0.15)
    assert len(warnings) == 1 and warnings[0].startswith("C ") and "next to A" in warnings[0]
    assert likely_splits(turns, 0.0) == []
    balanced = _turns((0, 10, "A"), (10, 20, "B"), (20, 30, "C"), (30, 40, "A"))
    assert likely_splits(balanced, 0.15) == []
    assert likely_splits(_turns((0, 5, "A")), 0.15) == []


def test_refresh_carries_names_to_new_labels_by_turn_overlap() -> None:
    from pipeline.speech.carry_over import carry_names

    old = _turns((0, 10, "SPEAKER_00"), (10, 20, "SPEAKER_01"), (20, 30, "SPEAKER_02"), (30, 40, "SPEAKER_00"))
    names = {"SPEAKER_00": "Maya", "SPEAKER_01": "Daniel", "SPEAKER_02": "Therapist"}
    # relabelled, edges moved by 0.2 s; SPEAKER_02 now spans two old voices; SPEAKER_03 is new speech
    new = _turns((0.2, 10.1, "SPEAKER_01"), (10.1, 25, "SPEAKER_02"), (25, 30, "SPEAKER_02"),
                 (30.2, 40, "SPEAKER_01"), (41, 45, "SPEAKER_03"), (45, 50, "SPEAKER_00"))
    carried = carry_names(old, names, new, min_share=0.8)
    assert carried["SPEAKER_01"].name == "Maya" and carried["SPEAKER_01"].share > 0.95
    assert carried["SPEAKER_01"].old_labels == ("SPEAKER_00",)
    assert set(carried) == {"SPEAKER_01"}  # SPEAKER_02 is mixed, SPEAKER_03 and SPEAKER_00 overlap nothing named
    # two old labels with the same name count together
    merged = carry_names(old, {**names, "SPEAKER_02": "Daniel"}, new, min_share=0.8)
    assert merged["SPEAKER_02"].name == "Daniel" and merged["SPEAKER_02"].old_labels == ("SPEAKER_01", "SPEAKER_02")


STM_TEXT = """;; CATEGORY "0" "" ""
;; a comment line
rec1 1 Maya 0.50 2.25 <o,f0,female> Hello there, how are you?
rec1 1 Daniel 2.40 3.00 fine
rec1 1 excluded_region 3.00 4.00 ignore_time_segment_in_scoring
rec1 1 Maya 4.00 5.50 IGNORE_TIME_SEGMENT_IN_SCORING
rec2 A Zoe 0 1 other recording
rec1 1 Maya 6 7
"""


def test_stm_reader_keeps_speakers_times_and_text(tmp_path: Path) -> None:
    from pipeline.speech.stm import read_stm

    path = tmp_path / "ref.stm"
    path.write_text(STM_TEXT, encoding="utf-8")
    segments = read_stm(path)
    assert [(s.recording, s.speaker, s.start, s.end, s.text) for s in segments] == [
        ("rec1", "Maya", 0.5, 2.25, "Hello there, how are you?"), ("rec1", "Daniel", 2.4, 3.0, "fine"),
        ("rec2", "Zoe", 0.0, 1.0, "other recording"), ("rec1", "Maya", 6.0, 7.0, "")]


@pytest.mark.parametrize(("line", "expected"), [
    ("rec1 1 Maya 0.5", "expected at least 5 fields"),
    ("rec1 1 Maya zero 2.0 hi", "begin time 'zero' is not a number"),
    ("rec1 1 Maya 3.0 2.0 hi", "ends (2.0) before it begins (3.0)"),
])
def test_stm_reader_names_file_and_line_of_a_bad_segment(tmp_path: Path, line: str, expected: str) -> None:
    from pipeline.errors import RescueError
    from pipeline.speech.stm import read_stm

    path = tmp_path / "ref.stm"
    path.write_text(f";; header\nrec1 1 Maya 0 1 fine\n{line}\n", encoding="utf-8")
    with pytest.raises(RescueError) as caught:
        read_stm(path)
    assert f"{path}:3" in caught.value.message and expected in caught.value.message
