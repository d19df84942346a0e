"""Transcript quality against references: WER (jiwer) of the rows' text and DER (pyannote.metrics) of the
diarization turns and of the named rows, per session and overall.

References per session: `<dir>/<session_id>.stm` (text and speaker turns), or `<dir>/<session_id>.{srt,vtt,txt}`
(text), with `<dir>/<session_id>.rttm` (speaker turns; preferred over the STM's) when a reference folder is
given; otherwise the catalog's subtitles (text, and speaker turns from `Name:` prefixes when every
cue has one). DER settings are stated in the result: collar (seconds forgiven around each reference
boundary) and whether overlapped speech is scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.speech import diarize, transcribe
from pipeline.speech.subtitles import cue_segments, read_subtitles
from pipeline.transcripts import read_rows, rows_path

Turn = tuple[float, float, str]


@dataclass(frozen=True)
class Reference:
    text: str
    turns: list[Turn] | None
    source: str


def _normalise():  # -> jiwer transform
    import jiwer

    return jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(),
                          jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])


def _stm_reference(path: Path, session_id: str, encoding: str) -> tuple[str, list[Turn]]:
    """Text and speaker turns of one recording in an STM file: the recording named like the session (its id, or
    the id's last part), or the only one."""
    from pipeline.speech.stm import read_stm

    segments = read_stm(path, encoding)
    recordings = sorted({s.recording for s in segments})
    wanted = next((r for r in (session_id, session_id.rsplit("/", 1)[-1]) if r in recordings), None)
    if wanted is None and len(recordings) > 1:
        raise RescueError(f"{path} holds recordings {', '.join(recordings)}, none named {session_id!r}",
                          f"name the session's recording {session_id.rsplit('/', 1)[-1]!r} in its first column, or "
                          "keep one recording per file")
    mine = sorted((s for s in segments if wanted is None or s.recording == wanted), key=lambda s: s.start)
    return " ".join(s.text for s in mine if s.text), [(s.start, s.end, s.speaker) for s in mine if s.end > s.start]


def load_reference(project: Project, entry: CatalogEntry, folder: Path | None, encoding: str) -> Reference:
    media = transcribe.read_media(project, entry.session_id)
    if folder is not None:
        base = folder / entry.session_id
        text_file = next((base.with_name(base.name + ext) for ext in (".stm", ".srt", ".vtt", ".txt")
                          if base.with_name(base.name + ext).is_file()), None)
        rttm = base.with_name(base.name + ".rttm")
        if text_file is None:
            raise RescueError(f"no reference transcript {base}.stm/.srt/.vtt/.txt for {entry.session_id}",
                              "put one there, or leave out --references to score against the catalog's subtitles")
        turns = None
        if text_file.suffix == ".stm":
            text, stm_turns = _stm_reference(text_file, entry.session_id, encoding)
            turns = stm_turns or None
        elif text_file.suffix == ".txt":
            text = text_file.read_text(encoding="utf-8")
        else:
            read = read_subtitles(text_file, str(text_file), encoding)
            text = " ".join(s.text for s in cue_segments(read, 0.0, float("inf"))[0])
        if rttm.is_file():
            from pipeline.speech.pyannote_core_adapter import read_rttm

            found = read_rttm(rttm)
            from_rttm = found.get(entry.session_id) or (next(iter(found.values())) if len(found) == 1 else None)
            if from_rttm is not None:
                return Reference(text, from_rttm, f"{text_file.name} + {rttm.name}")
        return Reference(text, turns, text_file.name)
    if not entry.subtitles:
        raise RescueError(f"session {entry.session_id} has no subtitles to score against",
                          "give --references DIR holding <session_id>.stm, or <session_id>.rttm and "
                          "<session_id>.srt/.vtt/.txt")
    read = read_subtitles(project.abs(entry.subtitles), entry.subtitles, encoding)
    segments = cue_segments(read, media.clip_start, media.duration)[0]
    named = all(s.speaker_name for s in segments) and bool(segments)
    turns = [(s.start, s.end, s.speaker_name or "") for s in segments] if named else None
    return Reference(" ".join(s.text for s in segments), turns, f"{entry.subtitles} (catalog subtitles)")


def score_session(project: Project, entry: CatalogEntry, folder: Path | None, *, collar: float,
                  skip_overlap: bool, encoding: str = "utf-8") -> dict:
    """WER and DER of one built session; raw counts are kept so totals can be pooled."""
    import jiwer

    from pipeline.speech.pyannote_core_adapter import diarization_error

    if not rows_path(project, entry.session_id).exists():
        raise RescueError(f"session {entry.session_id} has no rows yet", f"run `rescue build {entry.session_id}`")
    reference = load_reference(project, entry, folder, encoding)
    rows = read_rows(project, entry.session_id)
    hypothesis = " ".join(row.text for row in rows)
    transform = _normalise()
    words = jiwer.process_words(reference.text or "", hypothesis or "", reference_transform=transform,
                                hypothesis_transform=transform) if reference.text.strip() else None
    result: dict = {"session_id": entry.session_id, "reference": reference.source,
                    "reference_words": 0, "word_errors": 0, "wer": None}
    if words is not None:
        errors = words.substitutions + words.deletions + words.insertions
        count = words.substitutions + words.deletions + words.hits
        result.update(reference_words=count, word_errors=errors, wer=errors / count if count else None)
    if reference.turns is not None:
        duration = transcribe.read_media(project, entry.session_id).duration
        turns = [(t.start, t.end, t.label) for t in diarize.read_turns(project, entry.session_id)]
        named = [(r.start, r.end, r.speaker) for r in rows]
        result["der"] = diarization_error(reference.turns, turns, duration, collar=collar, skip_overlap=skip_overlap)
        result["rows_der"] = diarization_error(reference.turns, named, duration, collar=collar,
                                               skip_overlap=skip_overlap)
    return result


def pooled(results: list[dict], key: str) -> float | None:
    parts = [r[key] for r in results if r.get(key)]
    total = sum(p["total"] for p in parts)
    if not total:
        return None
    return sum(p["confusion"] + p["missed_detection"] + p["false_alarm"] for p in parts) / total


def score_sessions(project: Project, entries: list[CatalogEntry], folder: Path | None, *, collar: float,
                   skip_overlap: bool, encoding: str = "utf-8") -> dict:
    sessions = [score_session(project, e, folder, collar=collar, skip_overlap=skip_overlap, encoding=encoding)
                for e in entries]
    words = sum(r["reference_words"] for r in sessions)
    return {
        "settings": {"collar_seconds": collar, "overlap_scored": not skip_overlap,
                     "wer_normalisation": "lower case, punctuation removed, whitespace collapsed",
                     "der": "pyannote.metrics DiarizationErrorRate, optimal speaker mapping, "
                            "uem = whole session; rows_der scores the named rows"},
        "sessions": sessions,
        "overall": {"wer": sum(r["word_errors"] for r in sessions) / words if words else None,
                    "der": pooled(sessions, "der"), "rows_der": pooled(sessions, "rows_der")},
    }
