"""Diarization labels -> participant names (+ Therapist): an automatic proposal from named subtitle cues,
confirmed or corrected by a human-edited mapping file `raw_video/speaker_maps/<session_id>.toml` that
`rescue speakers` writes. The file is an input (outside build/), tied to one diarization by its hash."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import THERAPIST, CatalogEntry
from pipeline.span import Span
from pipeline.speech.records import SpeakerTurn, SpeechSegment
from pipeline.speech.carry_over import Carried
from pipeline.speech.settings import RowSettings
from pipeline.speech.speaker_evidence import LabelEvidence, clock, describe

MAPS_FOLDER = "speaker_maps"


def mapping_path(project: Project, session_id: str) -> Path:
    return project.inside(project.raw_video / MAPS_FOLDER, f"{session_id}.toml", what="session id",
                          fix="use a plain session id")


def allowed_names(entry: CatalogEntry) -> tuple[str, ...]:
    """The names a label may get: the participants, and Therapist unless the catalog says no therapist speaks."""
    return (*entry.participants, THERAPIST) if entry.therapist else entry.participants


def canonical(name: str | None, allowed: Sequence[str], names_map: dict[str, str]) -> str | None:
    """A subtitle name as a catalog name (case-insensitive), through the file's [names] table if needed.
    Returns '' for names the file marks as 'not a speaker', None for unknown names."""
    if not name:
        return None
    lookup = {n.casefold(): n for n in allowed}
    if name.casefold() in lookup:
        return lookup[name.casefold()]
    mapped = {k.casefold(): v for k, v in names_map.items()}.get(name.casefold())
    if mapped is None:
        return None
    return lookup.get(mapped.casefold(), "") if mapped else ""


@dataclass(frozen=True)
class Proposal:
    label: str
    name: str  # '' when there is no confident proposal
    confident: bool
    evidence: str


@dataclass(frozen=True)
class MappingFile:
    path: Path
    session_id: str
    diarization_sha256: str
    labels: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)


def propose(turns: Sequence[SpeakerTurn], named: Sequence[SpeechSegment], allowed: Sequence[str],
            names_map: dict[str, str], settings: RowSettings) -> dict[str, Proposal]:
    """For each label: the subtitle name whose cues overlap its turns the most. Confident when that name is a
    catalog name and covers at least `mapping_min_share` of the label's named-cue time and
    `mapping_min_seconds` seconds."""
    overlap: dict[str, dict[str, float]] = {}
    speech: dict[str, float] = {}
    first: dict[str, float] = {}
    cues = sorted(named, key=lambda s: s.start)
    for turn in turns:
        span = Span(turn.start, turn.end)
        speech[turn.label] = speech.get(turn.label, 0.0) + turn.end - turn.start
        first.setdefault(turn.label, turn.start)
        per = overlap.setdefault(turn.label, {})
        for cue in cues:
            if cue.start >= turn.end:
                break
            shared = span.overlap(cue)
            if shared > 0 and cue.speaker_name:
                key = canonical(cue.speaker_name, allowed, names_map) or f"?{cue.speaker_name}"
                per[key] = per.get(key, 0.0) + shared
    proposals = {}
    for label in sorted(speech):
        about = f"{speech[label]:.1f} s of speech, first at {clock(first[label])}"
        per = {k: v for k, v in overlap.get(label, {}).items() if k}
        total = sum(per.values())
        if not total:
            proposals[label] = Proposal(label, "", False, f"{about}; no named subtitle overlaps it")
            continue
        best = max(sorted(per), key=lambda k: per[k])
        share = per[best] / total
        if best.startswith("?"):
            proposals[label] = Proposal(label, "", False, f"{about}; subtitles name it {best[1:]!r} ({share:.0%}), "
                                        "who is not in the catalog's participants")
            continue
        confident = share >= settings.mapping_min_share and per[best] >= settings.mapping_min_seconds
        proposals[label] = Proposal(label, best, confident,
                                    f"{about}; {share:.0%} of its {total:.1f} s under subtitles is named {best}")
    return proposals


def read_mapping(project: Project, path: Path) -> MappingFile:
    where = project.rel_or_abs(path)
    fix = f"fix the TOML in {where}, or delete it and run `rescue speakers` again"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RescueError(f"{where}: not valid TOML ({exc})", fix) from exc
    labels, names = data.get("labels", {}), data.get("names", {})
    if not isinstance(labels, dict) or not isinstance(names, dict) or \
            not all(isinstance(v, str) for v in [*labels.values(), *names.values()]):
        raise RescueError(f"{where}: [labels] and [names] must map strings to strings", fix)
    return MappingFile(path, str(data.get("session_id", "")), str(data.get("diarization_sha256", "")),
                       dict(labels), dict(names))


def check_mapping(project: Project, mapping: MappingFile, entry: CatalogEntry, turns_sha256: str) -> None:
    where = project.rel_or_abs(mapping.path)
    if mapping.session_id != entry.session_id:
        raise RescueError(f"{where}: session_id is {mapping.session_id!r}, expected {entry.session_id!r}",
                          "correct session_id in the file")
    if mapping.diarization_sha256 != turns_sha256:
        raise RescueError(f"{where} was written for another diarization of {entry.session_id} (its labels may now "
                          "name other voices)",
                          f"run `rescue speakers {entry.session_id} --refresh`, check the proposed names, then build")
    allowed = allowed_names(entry)
    bad = {key: value for key, value in mapping.labels.items() if value and value not in allowed}
    bad.update({f"names.{k}": v for k, v in mapping.names.items() if v and v not in allowed})
    if bad:
        key, value = next(iter(bad.items()))
        raise RescueError(f"{where}: {key} = {value!r} is not one of {', '.join(allowed)}",
                          "use a catalog participant name or Therapist (add missing people to the catalog)")


def render_mapping(entry: CatalogEntry, turns_sha256: str, proposals: dict[str, Proposal], kept: MappingFile | None,
                   unknown_names: Iterable[str], *, evidence: dict[str, LabelEvidence] | None = None,
                   carried: dict[str, Carried] | None = None, names: dict[str, str] | None = None,
                   notes: Sequence[str] = ()) -> str:
    """The mapping file's text. A label's value: kept from the existing file (same diarization), else carried
    from the file of an older diarization, else the proposal. Comments above each label: its snippets and the
    first words of its longest turns; `notes` (likely splits, what could not be carried) go on top."""
    import tomlkit

    allowed = allowed_names(entry)
    evidence, carried = evidence or {}, carried or {}
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Speaker mapping for session {entry.session_id}, written by `rescue speakers`."))
    doc.add(tomlkit.comment(f"Map every diarization label to one of: {', '.join(allowed)}. Several labels may"))
    doc.add(tomlkit.comment("name the same person. Write the name of every label whose value is empty (check the"))
    doc.add(tomlkit.comment("ones proposed without confidence); leave one empty only for a label that says nothing."))
    doc.add(tomlkit.comment("Listen to the snippets listed above each label (16 kHz WAV, the start of its longest"))
    doc.add(tomlkit.comment("turns) before you decide."))
    for note in notes:
        doc.add(tomlkit.comment(f"NOTE: {note}"))
    doc.add(tomlkit.comment("Then run `rescue build`. The labels belong to the diarization with this hash:"))
    doc.add("session_id", entry.session_id)
    doc.add("diarization_sha256", turns_sha256)
    labels = tomlkit.table()
    for label, proposal in sorted(proposals.items()):
        if label in evidence:
            for line in describe(evidence[label]):
                labels.add(tomlkit.comment(line))
        if kept and label in kept.labels:
            value, status = kept.labels[label], "kept from your file"
        elif label in carried:
            found = carried[label]
            value = found.name
            status = (f"carried from {' + '.join(found.old_labels)} of the file for the previous diarization "
                      f"({found.share:.0%} of its speech overlaps their turns)")
            if proposal.confident and proposal.name != found.name:
                status += f"; CHECK: subtitles propose {proposal.name}"
        else:  # the comment says what was proposed, so it stays true once the person has written the name
            value = proposal.name
            status = (f"proposed {value}, confident" if proposal.confident else
                      f"proposed {value}, not confident" if value else "no name proposed")
        item = tomlkit.string(value)
        item.comment(f"{status} -- {proposal.evidence}")
        labels.add(label, item)
    doc.add("labels", labels)
    table = tomlkit.table()
    table.add(tomlkit.comment("subtitle speaker prefixes that are not catalog names -> a catalog name, "
                              "or '' if the prefix is not a speaker"))
    previous = names if names is not None else (kept.names if kept else {})
    for name in sorted({*previous, *unknown_names}):
        table.add(name, previous.get(name, "?"))  # "?" is refused until someone decides
    doc.add("names", table)
    return tomlkit.dumps(doc)
