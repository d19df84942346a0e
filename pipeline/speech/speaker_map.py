"""`rescue speakers`: write (or complete) raw_video/speaker_maps/<session>.toml with, per diarization label, a
proposed name, audio snippets of its longest turns and their first words; on `--refresh`, names carried over
from the file of the previous diarization by time overlap."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.settings import Settings
from pipeline.speech import diarize, mapping, speaker_evidence, transcribe
from pipeline.speech import carry_over
from pipeline.speech.assign import assign_words, label_for_span
from pipeline.speech.records import SpeakerTurn, SpeechSegment
from pipeline.speech.transcript_stage import named_segments
from pipeline.store import write_text_atomic


@dataclass(frozen=True)
class SpeakerMapResult:
    path: Path
    proposals: dict[str, mapping.Proposal]
    evidence: dict[str, speaker_evidence.LabelEvidence]
    carried: dict[str, carry_over.Carried] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    kept: dict[str, str] = field(default_factory=dict)  # label -> the name already in the file (the person's)


def said_by_label(source: str, segments: list[SpeechSegment], turns: list[SpeakerTurn]) -> list[speaker_evidence.Said]:
    """Words (ASR) or unnamed subtitle cues with the diarization label they overlap most."""
    if source == "whisperx":
        words = assign_words([w for s in segments for w in s.words], turns)[0]
        return [speaker_evidence.Said(w.start, w.end, w.text, w.speaker_label or "") for w in words]
    ordered = sorted(turns, key=lambda t: (t.start, t.end))
    starts = [t.start for t in ordered]
    longest = max((t.end - t.start for t in ordered), default=0.0)
    said = []
    for seg in segments:
        if not seg.speaker_name:
            label = label_for_span(seg.start, seg.end, ordered, starts, longest)[0]
            said.append(speaker_evidence.Said(seg.start, seg.end, seg.text, label or ""))
    return said


def _carry(project: Project, entry: CatalogEntry, old: mapping.MappingFile, turns: list[SpeakerTurn],
           settings: Settings) -> tuple[dict[str, carry_over.Carried], list[str]]:
    old_turns = carry_over.archived_turns(project, entry.session_id, old.diarization_sha256)
    if old_turns is None:
        where = project.rel(carry_over.archive_path(project, entry.session_id, old.diarization_sha256))
        return {}, [f"no copy of the turns the previous file was made for ({where}), so no name could be carried "
                    "over: every label is proposed afresh"]
    carried = carry_over.carry_names(old_turns, old.labels, turns, settings.speech.rows.mapping_min_share)
    left = sorted({t.label for t in turns} - carried.keys())
    notes = [f"names carried over from the previous diarization's file by time overlap: "
             f"{', '.join(f'{k} = {v.name}' for k, v in sorted(carried.items())) or 'none'}"
             + (f"; not carried (check them): {', '.join(left)}" if left else "")]
    return carried, notes


def write_speaker_map(project: Project, entry: CatalogEntry, settings: Settings, *,
                      refresh: bool = False) -> SpeakerMapResult:
    """Write the mapping file with a proposal for every label, its snippets (build/snippets/<session>/) and words.
    Values already in the file are kept; a file made for another diarization is replaced only with `refresh`
    (the old one is kept as .toml.bak), carrying its names to the new labels that overlap the old ones."""
    tx = transcribe.read_transcription(project, entry.session_id)
    segments = transcribe.read_segments(project, entry.session_id)
    drec = diarize.read_diarization(project, entry.session_id)
    turns = diarize.read_turns(project, entry.session_id)
    path = mapping.mapping_path(project, entry.session_id)
    kept = mapping.read_mapping(project, path) if path.exists() else None
    carried: dict[str, carry_over.Carried] = {}
    notes: list[str] = []
    names = kept.names if kept else {}
    if kept is not None and kept.diarization_sha256 != drec.turns_sha256:
        if not refresh:
            raise RescueError(f"{project.rel_or_abs(path)} was written for another diarization of {entry.session_id}",
                              f"run `rescue speakers {entry.session_id} --refresh` (the old file is kept as .bak)")
        path.with_suffix(".toml.bak").write_bytes(path.read_bytes())
        carried, notes = _carry(project, entry, kept, turns, settings)
        kept = None
    allowed = mapping.allowed_names(entry)
    named = named_segments(project, entry, settings, segments, tx.source)
    unknown = sorted({s.speaker_name for s in named if s.speaker_name
                      and mapping.canonical(s.speaker_name, allowed, names) is None})
    proposals = mapping.propose(turns, named, allowed, names, settings.speech.rows)
    audio = project.abs(transcribe.read_media(project, entry.session_id).audio)
    evidence = speaker_evidence.write_snippets(project, entry.session_id, audio, speaker_evidence.gather(
        turns, said_by_label(tx.source, segments, turns)))
    warnings = [*speaker_evidence.likely_splits(turns, settings.speech.rows.split_max_share), *notes]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, mapping.render_mapping(entry, drec.turns_sha256, proposals, kept, unknown,
                                                   evidence=evidence, carried=carried, names=names, notes=warnings))
    carry_over.archive_turns(project, entry.session_id,
                                 project.session_dir(diarize.AREA, entry.session_id) / diarize.TURNS_FILE,
                                 drec.turns_sha256)
    kept_names = {label: name for label, name in (kept.labels.items() if kept else ()) if name and label in proposals}
    return SpeakerMapResult(path, proposals, evidence, carried, tuple(warnings), kept_names)
