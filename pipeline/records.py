"""Typed, frozen records that flow between stages. Records point to media files; they never embed them.

Paths inside records are POSIX paths relative to the project root, so a build folder can be moved
or shared between machines.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, model_serializer, model_validator

THERAPIST = "Therapist"
GROUP_LABELS = {"couple": "Couple", "family": "Family"}
RESERVED_NAMES = frozenset({THERAPIST, *GROUP_LABELS.values()})

Scenario = Literal["couple", "family"]

_ID_PART = r"[A-Za-z0-9][A-Za-z0-9_.\-]*"
SESSION_ID_PATTERN = re.compile(rf"^{_ID_PART}(/{_ID_PART})*$")


def check_session_id(value: str) -> str:
    """Session ids become folders under build/: letters, digits, `_ . -`, `/` between parts, no `..`."""
    if not SESSION_ID_PATTERN.match(value) or any(part in {".", ".."} or ".." in part for part in value.split("/")):
        raise ValueError(
            f"session id {value!r} is not allowed: use letters, digits, '_', '-', '.' and '/' between "
            "parts (e.g. 'alan_and_evelyn/001_s01e01_ct25_segment04'), no leading '/', no '..'"
        )
    return value


SessionId = Annotated[str, AfterValidator(check_session_id)]

PARTICIPANT_NAME_RULE = (
    "a participant name is one name on one line: no ';' (it separates names in the catalog), no '<' or '>', "
    "no control characters, no leading, trailing or doubled spaces, and not a reserved label ("
    + ", ".join(sorted(RESERVED_NAMES)) + ") in any case or accent; it does not start with = + - @ (a spreadsheet "
    "runs such a cell as a formula), holds no invisible or direction-override character, no '/' or '\\' and "
    "no '..'")

# Each participant is a speaker to tell apart, a choice in every Label Studio name field and a candidate in the
# STP task; published sessions have a handful (e.g. Maria, Nick, Joel). A bound well above that catches a pasted
# list or a generated catalog gone wrong before it reaches the diarizer and the annotation server.
MAX_PARTICIPANTS = 12
# Spec: a couple session has its two partners (some couple folders hold three: `aryn_josh_and_lorena`); a
# family session has at least two members (one client alone is not a family session).
PARTICIPANT_COUNTS = {"couple": (2, 3), "family": (2, MAX_PARTICIPANTS)}
_FORMULA_STARTS = ("=", "+", "-", "@")


def folded(name: str) -> str:
    """`name` without case or accents ("Thérapist" -> "therapist"): how a reader could confuse two labels."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def participant_name_problem(name: str) -> str | None:
    """Why `name` cannot be a participant (it becomes a label in Label Studio, the reports and the release)."""
    if not name.strip():
        return "it is empty"
    if ";" in name:
        return "it contains ';': give each participant separately"
    if any(ch in name for ch in "<>"):
        return "it contains '<' or '>' (markup)"
    if any(unicodedata.category(ch) in {"Cc", "Zl", "Zp"} for ch in name):
        return "it contains a line break or another control character"
    invisible = [ch for ch in name if unicodedata.category(ch) == "Cf"]
    if invisible:  # e.g. U+202E turns the rest of a line around in every table, report and file name
        return f"it contains an invisible formatting or direction-override character (U+{ord(invisible[0]):04X})"
    if name.startswith(_FORMULA_STARTS):
        return f"it starts with {name[0]!r}: a spreadsheet opening the catalog or a report would run it as a formula"
    if any(ch in name for ch in "/\\") or ".." in name:
        return "it contains '/', '\\' or '..' (a path, not a name)"
    if name != name.strip():
        return "it starts or ends with a space"
    if re.search(r"\s{2,}", name) or re.search(r"[^\S ]", name):
        return "it contains doubled spaces or a tab-like space"
    reserved = {folded(label): label for label in RESERVED_NAMES}.get(folded(name))
    if reserved:
        same = "" if name.casefold() == reserved.casefold() else f" ({name!r} reads as {reserved})"
        return f"{reserved} is a reserved label, not a participant name{same}"
    return None


Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Record(BaseModel):
    """Base for every record: immutable, unknown keys rejected, JSON-round-trippable."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class CatalogEntry(Record):
    """One session (a self-contained clip of an interview) as listed in a `sessions.csv` catalog."""

    session_id: SessionId
    scenario: Scenario
    participants: tuple[str, ...] = Field(min_length=1, description="on-screen client names; the therapist is implicit")
    video: str = Field(description="source video, relative to the project root, inside raw_video/")
    sha256: Sha256
    subtitles: str | None = Field(default=None, description="optional SRT/VTT, relative to the project root")
    clip_start: float | None = Field(default=None, ge=0)
    clip_end: float | None = Field(default=None, gt=0)
    source: str = Field(default="", description="free-text provenance: show, episode, licence")
    therapist: bool = Field(default=True, description="a therapist speaks in the session; False (catalog column "
                            "`therapist` = no) when only the participants do: the speaker count and names follow")

    @model_serializer(mode="wrap")
    def _leave_out_default_therapist(self, handler):  # type: ignore[no-untyped-def]
        # Stages fingerprint the dumped entry: leaving the default out keeps every existing session up to date.
        data = handler(self)
        if self.therapist and isinstance(data, dict):
            data.pop("therapist", None)
        return data

    @model_validator(mode="after")
    def _check(self) -> CatalogEntry:
        names = list(self.participants)
        if len(names) > MAX_PARTICIPANTS:  # before the names: one line, not 10,000 problems
            raise ValueError(f"{len(names)} participants: more than {MAX_PARTICIPANTS}, the most one session may "
                             "have (each is a speaker to tell apart and a choice in every annotation field)")
        for name in names:
            problem = participant_name_problem(name)
            if problem:
                raise ValueError(f"participant name {name!r} is not allowed: {problem} (rule: {PARTICIPANT_NAME_RULE})")
        if len({folded(n) for n in names}) != len(names):
            raise ValueError(f"participant names repeat: {', '.join(names)}")
        least, most = PARTICIPANT_COUNTS[self.scenario]
        if not least <= len(names) <= most:
            raise ValueError(f"a {self.scenario} session has {least}-{most} participants (the therapist is not "
                             f"one), not {len(names)}: {', '.join(names)}")
        if (self.clip_start is None) != (self.clip_end is None):
            raise ValueError("give both clip_start and clip_end, or neither")
        if self.clip_start is not None and self.clip_end is not None and self.clip_end <= self.clip_start:
            raise ValueError(f"clip_end ({self.clip_end}) must be after clip_start ({self.clip_start})")
        return self

    @property
    def is_clip(self) -> bool:
        return self.clip_start is not None


class VideoStream(Record):
    codec: str
    width: int
    height: int
    fps: float


class AudioStream(Record):
    codec: str
    sample_rate: int
    channels: int


class Keyframe(Record):
    time: float = Field(description="seconds from the session start")
    path: str


class SessionMedia(Record):
    """What ingest produced for one session: probed facts of the source and the derived media files."""

    session_id: SessionId
    scenario: Scenario
    participants: tuple[str, ...]
    source_video: str
    source_sha256: Sha256
    container: str
    source_duration: float = Field(gt=0)
    video_stream: VideoStream | None
    audio_stream: AudioStream
    clip_start: float = Field(ge=0, description="session start within the source, seconds")
    clip_end: float = Field(gt=0, description="session end within the source, seconds")
    session_video: str = Field(description="the video annotators see: the cut clip, or the source itself")
    audio: str = Field(description="16 kHz mono PCM WAV of the session, time 0 = clip_start")
    audio_sample_rate: int
    audio_samples: int
    keyframes: tuple[Keyframe, ...]
    subtitles: str | None = None

    @property
    def duration(self) -> float:
        return self.clip_end - self.clip_start


class TruthTurn(Record):
    """Ground truth of one synthetic turn: who spoke when, what was said, who was addressed."""

    index: int = Field(ge=1)
    speaker: str
    target: tuple[str, ...] = Field(min_length=1)
    text: str
    start: float = Field(ge=0)
    end: float = Field(gt=0)


class SampleTruth(Record):
    """Ground truth of a synthetic sample session, written next to its video."""

    session_id: SessionId
    scenario: Scenario
    participants: tuple[str, ...]
    duration: float
    voices: dict[str, str] = Field(description="speaker -> espeak-ng voice settings used")
    turns: tuple[TruthTurn, ...]


class Word(Record):
    """One recognised word with its time span and (after assignment) its diarization speaker label."""

    text: str
    start: float = Field(ge=0)
    end: float = Field(ge=0)
    score: float | None = None
    speaker_label: str | None = None


def row_id_for(session_id: str, start: float, end: float) -> str:
    """Stable row id from the session and the row's span in milliseconds (design principle 2)."""
    return f"{session_id}@{round(start * 1000):09d}-{round(end * 1000):09d}"


class TranscriptRow(Record):
    """One interaction unit (a benchmark row before annotation): who spoke when, to whom, what.

    `row_id` comes from the session id and time span, so labels survive re-transcription; when rows
    move, annotations are re-anchored by time overlap.
    """

    row_id: str
    session_id: SessionId
    row_index: int = Field(ge=1, description="1-based, in time order")
    start: float = Field(ge=0, description="seconds from the session start")
    end: float = Field(gt=0)
    speaker: str = Field(description="a participant name or 'Therapist'")
    speaker_label: str = Field(default="", description="the diarization label the speaker was mapped from")
    target: tuple[str, ...] = Field(default=(), description="a first guess for annotators; may be empty")
    text: str
    words: tuple[Word, ...] = ()
    overlap: bool = Field(default=False, description="another speaker talks during part of this row")
    clip: str | None = Field(default=None, description="per-row media clip for annotators")

    @model_validator(mode="after")
    def _check(self) -> TranscriptRow:
        if self.end <= self.start:
            raise ValueError(f"row {self.row_index}: end {self.end} must be after start {self.start}")
        return self


class Annotation(Record):
    """One annotator's value for one field of one row, parsed and validated from a Label Studio export."""

    schema_version: str
    scenario: Scenario
    session_id: SessionId
    row_id: str
    row_index: int = Field(ge=1)
    annotator: str = Field(description="the annotator's account (email)")
    field: str = Field(description="a field name of the annotation schema")
    value: JsonValue = Field(description="the field's value as the schema types it (labels, names, items)")
    task_id: int
    annotation_id: int
    updated_at: str = Field(description="ISO time the annotation was last saved in Label Studio")
    snapshot: str = Field(description="id of the pulled export snapshot this came from")
