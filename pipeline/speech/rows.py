"""Cut speaker-attributed units (words, or subtitle cue parts) into rows: interaction units in the paper's
sense, as far as timing can tell. A new row starts on every speaker change and after a pause longer than
`max_pause`; a row longer than `max_row_seconds` is split at sentence ends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.records import TranscriptRow, Word, row_id_for
from pipeline.speech.assign import others_overlap
from pipeline.speech.records import SpeakerTurn
from pipeline.speech.settings import RowSettings

_SENTENCE_END = (".", "?", "!", "…", '."', '?"', '!"')
_MIN_ROW_SECONDS = 0.01


@dataclass(frozen=True)
class Unit:
    """The smallest piece a row is made of: one word (ASR) or one speaker part of a subtitle cue."""

    start: float
    end: float
    text: str
    speaker: str
    label: str  # diarization label ('' when the speaker came from a subtitle prefix)
    word: Word | None = None

    @property
    def sentence_end(self) -> bool:
        return self.text.rstrip().endswith(_SENTENCE_END)


def _split_long(units: list[Unit], limit: float) -> list[list[Unit]]:
    """Split at the last sentence end that keeps a piece within `limit`; if a sentence alone is too long,
    at its widest pause inside the limit (a word boundary)."""
    pieces: list[list[Unit]] = []
    rest = units
    while rest and rest[-1].end - rest[0].start > limit:
        begin = rest[0].start
        inside = [i for i in range(len(rest) - 1) if rest[i].end - begin <= limit]
        ends = [i for i in inside if rest[i].sentence_end]
        if ends:
            cut = ends[-1]
        elif inside:
            cut = max(inside, key=lambda i: (rest[i + 1].start - rest[i].end, i))
        else:
            cut = 0
        pieces.append(rest[: cut + 1])
        rest = rest[cut + 1:]
    if rest:
        pieces.append(rest)
    return pieces


def group_units(units: Sequence[Unit], settings: RowSettings) -> list[list[Unit]]:
    groups: list[list[Unit]] = []
    for unit in sorted(units, key=lambda u: (u.start, u.end)):
        last = groups[-1][-1] if groups else None
        if last is None or unit.speaker != last.speaker or unit.start - last.end > settings.max_pause:
            groups.append([unit])
        else:
            groups[-1].append(unit)
    return [piece for group in groups for piece in _split_long(group, settings.max_row_seconds)]


def _snap(start: float, end: float, first: Unit, last: Unit, label: str, turns: Sequence[SpeakerTurn]
          ) -> tuple[float, float]:
    """Tighten word-based edges to the speaker's diarization turn edges where those fall inside the first /
    last word (whisper word edges drift into surrounding silence; segmentation edges are frame-accurate)."""
    if not label:
        return start, end
    mine = [t for t in turns if t.label == label and t.end > start and t.start < end]
    starts = [t.start for t in mine if first.start < t.start < first.end]
    ends = [t.end for t in mine if last.start < t.end < last.end]
    return (min(starts) if starts else start), (max(ends) if ends else end)


def _majority_label(units: Sequence[Unit]) -> str:
    time: dict[str, float] = {}
    for unit in units:
        time[unit.label] = time.get(unit.label, 0.0) + max(unit.end - unit.start, 1e-3)
    return max(sorted(time), key=lambda label: time[label]) if time else ""


def build_rows(session_id: str, units: Sequence[Unit], turns: Sequence[SpeakerTurn],
               settings: RowSettings) -> list[TranscriptRow]:
    rows: list[TranscriptRow] = []
    for group in group_units(units, settings):
        label = _majority_label(group)
        start, end = _snap(group[0].start, max(u.end for u in group), group[0], group[-1], label,
                           turns if group[0].word is not None else ())
        start, end = round(start, 3), round(max(end, start + _MIN_ROW_SECONDS), 3)
        overlap = others_overlap(start, end, label, turns) >= settings.overlap_min_seconds if label else False
        rows.append(TranscriptRow(
            row_id=row_id_for(session_id, start, end), session_id=session_id, row_index=len(rows) + 1,
            start=start, end=end, speaker=group[0].speaker, speaker_label=label,
            text=" ".join(u.text for u in group).strip(),
            words=tuple(u.word for u in group if u.word is not None), overlap=overlap))
    return _mark_row_overlaps(session_id, rows, settings.overlap_min_seconds)


def _mark_row_overlaps(session_id: str, rows: list[TranscriptRow], minimum: float) -> list[TranscriptRow]:
    """Rows of different speakers that overlap in time (overlapping subtitle cues, or words of two labels)
    are both marked; two rows with the very same span get distinct ids (the later one 1 ms longer)."""
    crossing = [False] * len(rows)
    for i, row in enumerate(rows):  # rows are in start order: only later rows that begin before this end can cross
        j = i + 1
        while j < len(rows) and rows[j].start < row.end:
            other = rows[j]
            if other.speaker != row.speaker and min(row.end, other.end) - other.start >= minimum:
                crossing[i] = crossing[j] = True
            j += 1
    out: list[TranscriptRow] = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        end = row.end
        while row_id_for(session_id, row.start, end) in seen:
            end = round(end + 0.001, 3)
        seen.add(row_id_for(session_id, row.start, end))
        out.append(row.model_copy(update={"overlap": row.overlap or crossing[i], "end": end,
                                          "row_id": row_id_for(session_id, row.start, end)}))
    return out
