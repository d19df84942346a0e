"""Load and validate a dialogue script (`scripts/<name>.json`): who says what to whom, and with which voice."""

from __future__ import annotations

import json
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.records import GROUP_LABELS, THERAPIST, Scenario, SessionId

MIN_WORDS, MAX_WORDS = 5, 30
MIN_TURNS_PER_SPEAKER = 3


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Voice(_Frozen):
    """espeak-ng settings for one speaker: voice+variant, pitch (-p) and speed in words per minute (-s)."""

    voice: str = Field(pattern=r"^[a-z0-9\-]+(\+[A-Za-z0-9_]+)?$")
    pitch: int = Field(ge=0, le=99)
    speed: int = Field(ge=80, le=450)

    @property
    def settings(self) -> str:
        """The string recorded in `SampleTruth.voices`, e.g. `en-us+m7 -p 30 -s 140`."""
        return f"{self.voice} -p {self.pitch} -s {self.speed}"


class ScriptTurn(_Frozen):
    speaker: str
    target: tuple[str, ...] = Field(min_length=1)
    text: str


class Script(_Frozen):
    session_id: SessionId
    scenario: Scenario
    participants: tuple[str, ...] = Field(min_length=1)
    roles: dict[str, str] = Field(description="speaker -> short role shown in the video, e.g. 'mother'")
    voices: dict[str, Voice]
    turns: tuple[ScriptTurn, ...] = Field(min_length=2)

    @property
    def speakers(self) -> tuple[str, ...]:
        return (THERAPIST, *self.participants)

    @property
    def group_label(self) -> str:
        return GROUP_LABELS[self.scenario]

    @model_validator(mode="after")
    def _check(self) -> Script:
        # The same closed entity set as the benchmark spec (section 2), so the truth is valid benchmark data.
        speakers = set(self.speakers)
        entities = speakers | {self.group_label}
        if set(self.voices) != speakers or set(self.roles) != speakers:
            raise ValueError(f"voices and roles must name exactly {sorted(speakers)}")
        if len({v.settings for v in self.voices.values()}) != len(self.voices):
            raise ValueError("every speaker needs a distinct voice")
        for n, turn in enumerate(self.turns, start=1):
            where = f"turn {n} ({turn.speaker})"
            if turn.speaker not in speakers:
                raise ValueError(f"{where}: unknown speaker")
            targets = set(turn.target)
            if not targets <= entities or turn.speaker in targets or len(targets) != len(turn.target):
                raise ValueError(
                    f"{where}: bad target {list(turn.target)}; allowed {sorted(entities)}, never the speaker"
                )
            if self.group_label in turn.target and len(turn.target) > 1:
                raise ValueError(f"{where}: the group label {self.group_label} must be the only target")
            if not MIN_WORDS <= len(turn.text.split()) <= MAX_WORDS:
                raise ValueError(f"{where}: text must have {MIN_WORDS}-{MAX_WORDS} words")
        for speaker in speakers:
            if sum(t.speaker == speaker for t in self.turns) < MIN_TURNS_PER_SPEAKER:
                raise ValueError(f"{speaker} speaks fewer than {MIN_TURNS_PER_SPEAKER} times")
        return self


def load_script(name: str) -> Script:
    """Read `pipeline/sample/scripts/<name>.json` through importlib.resources, so it also works when installed."""
    text = resources.files("pipeline.sample").joinpath("scripts", f"{name}.json").read_text(encoding="utf-8")
    return Script.model_validate(json.loads(text))
