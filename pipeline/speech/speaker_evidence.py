"""What a person needs to name a diarization label: short audio snippets of its longest turns (written under
build/snippets/<session>/, 16 kHz mono WAV cut from the session's ingested audio), the first words said in each
of those turns, and a warning where a small label sits next to another one (likely one voice split in two)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline.project import Project
from pipeline.speech import audio as wav
from pipeline.speech.records import SpeakerTurn
from pipeline.store import atomic_dir

AREA = "snippets"
SNIPPETS_PER_LABEL = 3
SNIPPET_SECONDS = 5.0
WORDS_PER_TURN = 12


@dataclass(frozen=True)
class Said:
    """A word (ASR) or a subtitle cue part, with the diarization label it was given."""

    start: float
    end: float
    text: str
    label: str


@dataclass(frozen=True)
class TurnSample:
    start: float  # the snippet's span: the start of the turn, at most SNIPPET_SECONDS long
    end: float
    words: str  # the first words said in the turn
    snippet: str = ""  # project-relative WAV path, once written


@dataclass(frozen=True)
class LabelEvidence:
    label: str
    speech_seconds: float
    turns: int
    samples: tuple[TurnSample, ...]


def clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def snippets_dir(project: Project, session_id: str) -> Path:
    return project.session_dir(AREA, session_id)


def gather(turns: Sequence[SpeakerTurn], said: Sequence[Said]) -> dict[str, LabelEvidence]:
    """Per label: its speech time and its SNIPPETS_PER_LABEL longest turns (in time order) with their first
    words. Words count for a turn when their label is the turn's and their middle lies inside it, so a turn's
    words never mix two voices."""
    by_label: dict[str, list[SpeakerTurn]] = {}
    for turn in turns:
        by_label.setdefault(turn.label, []).append(turn)
    words = sorted(said, key=lambda s: s.start)
    evidence = {}
    for label, mine in sorted(by_label.items()):
        longest = sorted(sorted(mine, key=lambda t: (t.start - t.end, t.start))[:SNIPPETS_PER_LABEL],
                         key=lambda t: t.start)
        samples = []
        for turn in longest:
            inside = [s.text for s in words if s.label == label and turn.start <= (s.start + s.end) / 2 <= turn.end]
            samples.append(TurnSample(turn.start, min(turn.end, turn.start + SNIPPET_SECONDS),
                                      " ".join(inside[:WORDS_PER_TURN]) + (" ..." if len(inside) > WORDS_PER_TURN else "")))
        evidence[label] = LabelEvidence(label, round(sum(t.end - t.start for t in mine), 3), len(mine), tuple(samples))
    return evidence


def write_snippets(project: Project, session_id: str, audio: Path,
                   evidence: dict[str, LabelEvidence]) -> dict[str, LabelEvidence]:
    """Cut each sample's span from the session WAV into build/snippets/<session>/<label>-<n>.wav, replacing the
    folder as a whole (snippets of an older diarization never linger). Returns the evidence with the paths."""
    final = snippets_dir(project, session_id)
    out = {}
    with atomic_dir(final) as work:
        for label, found in evidence.items():
            samples = []
            for number, sample in enumerate(found.samples, 1):
                name = f"{label}-{number}.wav"
                wav.copy_span(audio, work / name, sample.start, sample.end)
                samples.append(replace(sample, snippet=project.rel(final / name)))
            out[label] = replace(found, samples=tuple(samples))
    return out


def describe(found: LabelEvidence) -> list[str]:
    """Lines for the mapping file's comments and the stop message: the label's time, then one per snippet."""
    lines = [f"{found.label}: {found.speech_seconds:.1f} s of speech in {found.turns} turn(s); its longest turns:"]
    lines += [f"  {s.snippet or '(no snippet)'}  {clock(s.start)}-{clock(s.end)}  \"{s.words}\"" for s in found.samples]
    return lines


def _nearest_others(ordered: Sequence[SpeakerTurn]) -> list[str | None]:
    """For each turn, the label of the closest turn of another label before or after it (overlapping counts as
    0 s away); two linear passes, so hours of turns stay cheap."""
    before: list[int | None] = [None] * len(ordered)
    after: list[int | None] = [None] * len(ordered)
    for index in range(1, len(ordered)):  # the last turn of another label before each turn
        previous = index - 1
        before[index] = previous if ordered[previous].label != ordered[index].label else before[previous]
    for index in range(len(ordered) - 2, -1, -1):
        following = index + 1
        after[index] = following if ordered[following].label != ordered[index].label else after[following]
    nearest: list[str | None] = []
    for index, turn in enumerate(ordered):
        best: tuple[float, str] | None = None
        for other_index in (before[index], after[index]):
            if other_index is not None:
                other = ordered[other_index]
                gap = max(other.start - turn.end, turn.start - other.end, 0.0)
                if best is None or gap < best[0]:
                    best = (gap, other.label)
        nearest.append(best[1] if best else None)
    return nearest


def likely_splits(turns: Sequence[SpeakerTurn], max_share: float) -> list[str]:
    """Labels holding less than `max_share` of the speech of themselves plus the label their turns sit next to
    most (by time): often one voice the diarization cut in two, sometimes a brief extra voice."""
    ordered = sorted(turns, key=lambda t: (t.start, t.end))
    speech: dict[str, float] = {}
    counts: dict[str, int] = {}
    beside: dict[str, dict[str, float]] = {}
    for turn, other in zip(ordered, _nearest_others(ordered)):
        speech[turn.label] = speech.get(turn.label, 0.0) + turn.end - turn.start
        counts[turn.label] = counts.get(turn.label, 0) + 1
        if other is not None:
            near = beside.setdefault(turn.label, {})
            near[other] = near.get(other, 0.0) + turn.end - turn.start
    warnings = []
    for label in sorted(beside):
        neighbour = max(sorted(beside[label]), key=lambda other: beside[label][other])
        share = speech[label] / (speech[label] + speech[neighbour])
        if share < max_share:
            warnings.append(f"{label} holds only {share:.0%} of the speech of {label} and {neighbour} "
                            f"({speech[label]:.1f} s in {counts[label]} turn(s), mostly next to {neighbour}'s "
                            f"turns): likely one voice split in two, or a brief extra voice; listen to both "
                            "labels' snippets and give them the same name if they are one person")
    return warnings
