"""The `rows` stage: words (or subtitle cues) -> diarization labels -> participant names -> rows, plus exports
and per-row clips. Writes build/transcripts/<session>/ (rows.jsonl is the contract with annotation)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline import layout
from pipeline.errors import RescueError
from pipeline.media import ffmpeg_adapter
from pipeline.progress import advance
from pipeline.project import Project
from pipeline.records import CatalogEntry, TranscriptRow
from pipeline.settings import Settings
from pipeline.speech import diarize, mapping, speaker_evidence, transcribe
from pipeline.speech.assign import FAR_SECONDS, assign_words, label_for_span
from pipeline.speech.exports import TranscriptExport, write_exports
from pipeline.speech.records import SpeakerAssignment, SpeakerTurn, SpeechSegment, TranscriptSummary
from pipeline.speech.rows import Unit, build_rows
from pipeline.speech.subtitles import cue_segments, read_subtitles
from pipeline.transcripts import ROWS_FILE, clip_end, write_rows

AREA = layout.TRANSCRIPTS_AREA
RECORD_NAME = "summary.json"
CLIPS_FOLDER = "clips"


def rows_inputs(project: Project, entry: CatalogEntry) -> list[Path]:
    """Human inputs read here: the speaker mapping file and the subtitles (names for the mapping proposal)."""
    files = [mapping.mapping_path(project, entry.session_id)]
    if entry.subtitles:
        files.append(project.abs(entry.subtitles))
    return files


@dataclass(frozen=True)
class SpeakerPlan:
    """What every label and subtitle name stands for, and where that came from."""

    labels: dict[str, str]
    assignments: tuple[SpeakerAssignment, ...]
    mapping_file: str | None


def named_segments(project: Project, entry: CatalogEntry, settings: Settings,
                   segments: list[SpeechSegment], source: str) -> list[SpeechSegment]:
    """Subtitle parts that carry a speaker prefix: evidence for the automatic mapping."""
    if source == "subtitles":
        return [s for s in segments if s.speaker_name]
    if not entry.subtitles:
        return []
    media = transcribe.read_media(project, entry.session_id)
    read = read_subtitles(project.abs(entry.subtitles), entry.subtitles, settings.speech.subtitle_encoding)
    return [s for s in cue_segments(read, media.clip_start, media.duration)[0] if s.speaker_name]


def _stop_for_names(project: Project, entry: CatalogEntry, settings: Settings, turns: list[SpeakerTurn],
                    said: list[speaker_evidence.Said], missing: list[str], proposals: dict[str, mapping.Proposal],
                    file_used: str | None) -> RescueError:
    """The stop for unnamed labels, after writing each label's snippets so the person can listen first."""
    path = mapping.mapping_path(project, entry.session_id)
    audio = project.abs(transcribe.read_media(project, entry.session_id).audio)
    evidence = speaker_evidence.write_snippets(project, entry.session_id, audio,
                                               speaker_evidence.gather(turns, said))
    details = []
    for label in missing:
        about = proposals[label].evidence if label in proposals else label
        heard = "; ".join(f'"{s.words}"' for s in evidence[label].samples if s.words) if label in evidence else ""
        details.append(f"{label}: {about}" + (f"; says {heard}" if heard else ""))
    splits = speaker_evidence.likely_splits(turns, settings.speech.rows.split_max_share)
    where = project.rel_or_abs(path)
    action = f"edit {where}" if file_used else f"run `rescue speakers {entry.session_id}`, edit {where}"
    # one short line and the fix; each label's evidence (and any likely split) on a line of its own below
    return RescueError(f"session {entry.session_id}: no confident name for speaker label(s) {', '.join(missing)}; "
                       f"listen to {project.rel(speaker_evidence.snippets_dir(project, entry.session_id))}/",
                       f"{action}: map each label to one of {', '.join(mapping.allowed_names(entry))}; "
                       "then run `rescue build`",
                       details=(*details, *(f"warning: {w}" for w in splits)))


def plan_speakers(project: Project, entry: CatalogEntry, settings: Settings, turns: list[SpeakerTurn],
                  turns_sha256: str, named: list[SpeechSegment], needed: set[str],
                  said: list[speaker_evidence.Said]) -> SpeakerPlan:
    """Label -> name for every needed label: from the mapping file when there is one, else the confident
    automatic proposal; an unmapped label stops the session with a pointer to the mapping file and to audio
    snippets of every label (written then, under build/snippets/)."""
    path = mapping.mapping_path(project, entry.session_id)
    allowed = mapping.allowed_names(entry)
    names_map: dict[str, str] = {}
    chosen: dict[str, tuple[str, str, str]] = {}
    if path.exists():
        loaded = mapping.read_mapping(project, path)
        mapping.check_mapping(project, loaded, entry, turns_sha256)
        names_map = loaded.names
        chosen = {label: (name, "mapping file", "") for label, name in loaded.labels.items() if name}
        file_used: str | None = project.rel_or_abs(path)
    else:
        file_used = None
    proposals = mapping.propose(turns, named, allowed, names_map, settings.speech.rows)
    if file_used is None:
        chosen = {p.label: (p.name, "automatic", p.evidence) for p in proposals.values() if p.confident}
    missing = sorted(needed - chosen.keys())
    if missing:
        raise _stop_for_names(project, entry, settings, turns, said, missing, proposals, file_used)
    assignments = tuple(SpeakerAssignment(key=label, name=chosen[label][0], origin=chosen[label][1],  # type: ignore[arg-type]
                                          evidence=chosen[label][2] or proposals.get(label, mapping.Proposal(
                                              label, "", False, "")).evidence)
                        for label in sorted(needed))
    return SpeakerPlan({label: chosen[label][0] for label in needed}, assignments, file_used)


def subtitle_names(project: Project, entry: CatalogEntry, segments: list[SpeechSegment]) -> dict[str, str]:
    """Subtitle prefix -> catalog name ('' = not a speaker); unknown prefixes stop the session."""
    path = mapping.mapping_path(project, entry.session_id)
    names_map = mapping.read_mapping(project, path).names if path.exists() else {}
    allowed = mapping.allowed_names(entry)
    resolved, unknown = {}, []
    for name in sorted({s.speaker_name for s in segments if s.speaker_name}):
        value = mapping.canonical(name, allowed, names_map)
        if value is None:
            unknown.append(name)
        else:
            resolved[name] = value
    if unknown:
        raise RescueError(f"session {entry.session_id}: subtitle speaker prefix(es) {', '.join(map(repr, unknown))} "
                          f"are not catalog names ({', '.join(allowed)})",
                          f"run `rescue speakers {entry.session_id}` and map them under [names] in "
                          f"{project.rel_or_abs(path)} (or add the people to the catalog's participants)")
    return resolved


def _units(project: Project, entry: CatalogEntry, settings: Settings, segments: list[SpeechSegment],
           source: str, turns: list[SpeakerTurn]) -> tuple[list[tuple[Unit, str | None]], int]:
    """Units with their label, speaker name still unresolved (None) unless a subtitle prefix gives it."""
    if source == "whisperx":
        words, far = assign_words([w for s in segments for w in s.words], turns)
        return [(Unit(w.start, w.end, w.text, "", w.speaker_label or "", w), None) for w in words], far
    names = subtitle_names(project, entry, segments)
    ordered = sorted(turns, key=lambda t: (t.start, t.end))
    starts = [t.start for t in ordered]
    longest = max((t.end - t.start for t in ordered), default=0.0)
    units, far = [], 0
    for seg in segments:
        name = names.get(seg.speaker_name or "", "") or None
        label, distance = ("", 0.0) if name else label_for_span(seg.start, seg.end, ordered, starts, longest)
        far += distance > FAR_SECONDS
        units.append((Unit(seg.start, seg.end, seg.text, "", label or ""), name))
    return units, far


def make_rows(project: Project, entry: CatalogEntry, settings: Settings) -> tuple[list[TranscriptRow], dict]:
    """The library function behind the stage: rows plus what the summary needs."""
    tx = transcribe.read_transcription(project, entry.session_id)
    segments = transcribe.read_segments(project, entry.session_id)
    drec = diarize.read_diarization(project, entry.session_id)
    turns = diarize.read_turns(project, entry.session_id)
    raw, far = _units(project, entry, settings, segments, tx.source, turns)
    warnings = [*tx.warnings, *drec.warnings]
    if raw and not turns and any(name is None for _, name in raw):
        warnings.append(f"{sum(1 for _, n in raw if n is None)} transcribed word(s)/cue(s) but no speaker turns "
                        "(noise or music?): no rows for them")
        raw = [(unit, name) for unit, name in raw if name is not None]
    if far:
        warnings.append(f"{far} word(s)/cue(s) lie more than {FAR_SECONDS:g} s from any speaker turn; "
                        "given the nearest speaker")
    said = [speaker_evidence.Said(u.start, u.end, u.text, u.label) for u, name in raw if name is None and u.label]
    needed = {s.label for s in said}
    named = named_segments(project, entry, settings, segments, tx.source) if needed else []
    plan = plan_speakers(project, entry, settings, turns, drec.turns_sha256, named, needed, said)
    warnings += speaker_evidence.likely_splits(turns, settings.speech.rows.split_max_share)
    if tx.source == "subtitles":
        by_prefix = tuple(SpeakerAssignment(key=f"name:{prefix}", name=name, origin="subtitles")
                          for prefix, name in sorted(subtitle_names(project, entry, segments).items()) if name)
        plan = SpeakerPlan(plan.labels, (*plan.assignments, *by_prefix), plan.mapping_file)
    units = [Unit(u.start, u.end, u.text, name or plan.labels[u.label], u.label, u.word) for u, name in raw]
    rows = build_rows(entry.session_id, units, turns, settings.speech.rows)
    unused = tuple(sorted({t.label for t in turns} - needed))
    return rows, dict(tx=tx, drec=drec, plan=plan, warnings=warnings, unused=unused)


def cut_clips(project: Project, entry: CatalogEntry, rows: list[TranscriptRow], workdir: Path,
              final_dir: Path) -> list[TranscriptRow]:
    """One re-encoded clip per row (clips/NNN.mp4, NNN = row index) for annotators, a few ffmpeg passes per
    session (see ffmpeg_adapter.cut_clips)."""
    media = transcribe.read_media(project, entry.session_id)
    folder = workdir / CLIPS_FOLDER
    folder.mkdir(exist_ok=True)
    spans, out = [], []
    for row in rows:
        name = f"{row.row_index:03d}.mp4"
        spans.append(ffmpeg_adapter.ClipSpan(folder / name, row.start, clip_end(row.start, row.end, media.duration)))
        out.append(row.model_copy(update={"clip": project.rel(final_dir / CLIPS_FOLDER / name)}))
    ffmpeg_adapter.cut_clips(project.abs(media.session_video), spans, has_video=media.video_stream is not None,
                             done=lambda cut: advance(cut, len(spans), "clips"))
    return out


def rows_session(project: Project, entry: CatalogEntry, settings: Settings, workdir: Path,
                 final_dir: Path) -> TranscriptSummary:
    rows, info = make_rows(project, entry, settings)
    if settings.speech.rows.clips and rows:
        rows = cut_clips(project, entry, rows, workdir, final_dir)
    write_rows(workdir / ROWS_FILE, rows)
    tx, drec, plan = info["tx"], info["drec"], info["plan"]
    export = TranscriptExport(session_id=entry.session_id, scenario=entry.scenario, participants=entry.participants,
                              transcription=tx, diarization=drec, speakers=plan.assignments, rows=tuple(rows))
    exports = write_exports(workdir, export)
    summary = TranscriptSummary(
        session_id=entry.session_id, source=tx.source, word_timing=tx.word_timing,
        asr_model=f"{tx.model} ({tx.model_origin})" if tx.model else "", diarization_pipeline=drec.pipeline,
        rows=len(rows), words=sum(len(r.words) for r in rows), overlap_rows=sum(r.overlap for r in rows),
        speakers=plan.assignments, mapping_file=plan.mapping_file, unused_labels=info["unused"],
        clips=sum(r.clip is not None for r in rows), exports=(ROWS_FILE, *exports),
        warnings=tuple(info["warnings"]) if rows else (*info["warnings"], "no rows: the session has no speech text"))
    (workdir / RECORD_NAME).write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return summary
