"""Synthetic annotations for tests and the benchmark: sessions of rows with a hidden true answer per
field, and annotators who give it with probability `agreement` and a plausible wrong answer otherwise.

Deterministic for a seed. Field values follow the schema (label sets per scenario, closed entity set,
intensity 0-10, item lists keyed as the schema says), so the same records exercise agreement,
consensus and gold writing.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pipeline.records import Annotation, TranscriptRow, row_id_for
from pipeline.schema import AnnotationSchema

NAMES = ("Alan", "Evelyn", "Maria", "Nick", "Joel", "Linda", "Mark", "Zoe", "Ping", "Will", "Dru", "Tashira")
FEELINGS = ("hurt", "angry", "defensive", "cornered", "dismissed", "unheard", "lonely", "anxious", "frustrated",
            "resentful", "hopeful", "relieved", "ashamed", "guilty", "tender", "exhausted", "protective", "confused")
TOPICS = ("the money", "the kids", "her mother", "his job", "the move", "the affair", "chores", "the holidays",
          "their past", "the therapy", "being late", "the phone")
MANNERS = ("firm", "soft", "shaky", "flat", "sharp", "warm", "quiet", "raised", "sarcastic", "pleading")
BODY = ("leaning forward", "arms crossed", "turned away", "slumped", "upright", "facing the partner", "fidgeting")


@dataclass(frozen=True)
class SyntheticSession:
    session_id: str
    scenario: str
    participants: tuple[str, ...]
    rows: tuple[TranscriptRow, ...]


def _phrase(rng: random.Random) -> str:
    return f"feels {rng.choice(FEELINGS)} and {rng.choice(FEELINGS)} about {rng.choice(TOPICS)}"


def benchmark_shape(scale: int = 1) -> list[tuple[str, int]]:
    """(scenario, rows) per session with the published corpus's totals, times `scale`:
    174 couple sessions with 5,875 rows and 17 family sessions with 1,204 rows (7,079 rows)."""
    shape = []
    for scenario, sessions, rows in (("couple", 174 * scale, 5875 * scale), ("family", 17 * scale, 1204 * scale)):
        base, extra = divmod(rows, sessions)
        shape += [(scenario, base + (1 if i < extra else 0)) for i in range(sessions)]
    return shape


def make_sessions(n_sessions: int, *, family_share: float = 17 / 191, rows_couple: int = 34, rows_family: int = 71,
                  seed: int = 7, shape: list[tuple[str, int]] | None = None) -> list[SyntheticSession]:
    """Random sessions, or exactly `shape` ((scenario, rows) per session) when given."""
    rng = random.Random(seed)
    sessions = []
    for number in range(len(shape) if shape else n_sessions):
        family = shape[number][0] == "family" if shape else rng.random() < family_share
        people = tuple(rng.sample(NAMES, 3 if family else 2))
        scenario = "family" if family else "couple"
        session_id = f"{'family_therapy' if family else '_and_'.join(p.lower() for p in people)}/{number:04d}"
        n_rows = shape[number][1] if shape else max(3, int(rng.gauss(rows_family if family else rows_couple, 5)))
        rows, clock, previous = [], 0.0, ""
        for index in range(1, n_rows + 1):
            speaker = "Therapist" if rng.random() < (0.45 if family else 0.35) and previous != "Therapist" \
                else rng.choice(people)
            start, clock = clock, clock + rng.uniform(1.5, 12.0)
            others = [p for p in (*people, "Therapist") if p != speaker]
            text = f"{rng.choice(TOPICS)} is {rng.choice(FEELINGS)} {rng.choice(MANNERS)} line {index}"
            rows.append(TranscriptRow(row_id=row_id_for(session_id, start, clock), session_id=session_id,
                                      row_index=index, start=start, end=clock, speaker=speaker,
                                      target=(rng.choice(others),), text=text))
            previous = speaker
        sessions.append(SyntheticSession(session_id, scenario, people, tuple(rows)))
    return sessions


class _Truth:
    """The hidden true value of every field of one row, and a wrong-but-plausible alternative."""

    def __init__(self, schema: AnnotationSchema, session: SyntheticSession, row: TranscriptRow,
                 rng: random.Random) -> None:
        self.schema, self.session, self.row, self.rng = schema, session, row, rng
        self.entities = schema.entities(session.scenario, session.participants)  # type: ignore[arg-type]
        self.clients = session.participants

    def value(self, field: str, wrong: bool) -> object:
        rng, row = self.rng, self.row
        speaker = row.speaker if not (wrong and field == "primary_speaker") else rng.choice(self.entities)
        others = [e for e in self.entities if e != row.speaker]
        if field == "primary_speaker":
            return speaker
        if field == "target":
            return list(row.target) if not wrong else sorted(set(rng.sample(others, rng.randint(1, 2))))
        if field == "dialogue_cleaned":
            return row.text if not wrong else row.text.replace("line", "said")
        if field == "utterance_type":
            return self.label("utterance_type")
        if field == "tone_of_voice":
            return f"{rng.choice(MANNERS)} and {rng.choice(FEELINGS)}"
        if field in {"body_posture", "facial_expressions", "self_directed_behavior"}:
            people = rng.sample(self.clients, rng.randint(0, len(self.clients)))
            return [{"person": p, "description": f"{rng.choice(BODY)}, {rng.choice(MANNERS)}"} for p in people]
        if field == "internal_emotion":
            people = [row.speaker] if row.speaker in self.clients else []
            if wrong and rng.random() < 0.3:
                people += [p for p in self.clients if p not in people][:1]
            return [{"person": p, "emotion_description": _phrase(rng), "intensity": rng.randint(2, 9)}
                    for p in people]
        if field == "interaction_behavior":
            return [{"initiator": row.speaker, "target": [rng.choice(others)], "description": rng.choice(BODY)}] \
                if rng.random() < 0.4 else []
        if field == "background_dialogue":
            return [] if rng.random() < 0.85 else [{"speaker": rng.choice(others), "target": [row.speaker],
                                                    "content": rng.choice(TOPICS)}]
        if field == "viewpoints_attitudes":
            partner = [c for c in self.clients if c != row.speaker] or ["Therapist"]
            return [{"source": row.speaker, "target": rng.choice(partner), "viewpoint": _phrase(rng),
                     "attitude": rng.choice(FEELINGS)}]
        if field == "support_strategy":
            return [{"provider": "Therapist", "target": [rng.choice(self.clients)],
                     "strategy_type": self.label("support_strategy"), "strategy_content": _phrase(rng)}] \
                if rng.random() < 0.7 else []
        if field == "relation_cycle_state":
            return self.label("relation_pattern", allow_empty=True)
        if field == "relation_cycle_reason":
            return f"{rng.choice(self.clients)} is {rng.choice(FEELINGS)} about {rng.choice(TOPICS)}"
        if field == "relation_cycle_evidence_rows":
            return sorted(rng.sample(range(max(1, row.row_index - 4), row.row_index + 1),
                                     min(row.row_index, rng.randint(1, 3))))
        raise KeyError(field)

    def label(self, label_set: str, allow_empty: bool = False) -> str:
        labels = list(self.schema.labels(label_set, self.session.scenario))  # type: ignore[arg-type]
        weights = [2 ** -i for i in range(len(labels))]  # skewed, as the benchmark's label distributions are
        if allow_empty:
            labels, weights = ["", *labels], [0.3, *weights]
        return self.rng.choices(labels, weights)[0]


def make_annotations(schema: AnnotationSchema, sessions: Sequence[SyntheticSession], annotators: Sequence[str],
                     *, agreement: float = 0.8, coverage: float = 1.0, seed: int = 11,
                     snapshot: str = "20261130T000000Z") -> Iterator[Annotation]:
    """Answers of every annotator for every applicable field of every row (a share `coverage` of rows each)."""
    rng = random.Random(seed)
    fields = [f for f in schema.fields if f.annotated]
    next_id = 1
    for session in sessions:
        for row in session.rows:
            truth_rng = random.Random(f"{seed}/{row.row_id}")
            true = {}
            for field in fields:
                if field.applies(row.speaker, schema.therapist):
                    true[field.name] = _Truth(schema, session, row, truth_rng).value(field.name, wrong=False)
            for annotator in annotators:
                if rng.random() >= coverage:
                    continue
                for name, value in true.items():
                    if rng.random() >= agreement:
                        value = _Truth(schema, session, row, rng).value(name, wrong=True)
                    yield Annotation(schema_version=schema.id, scenario=session.scenario,  # type: ignore[arg-type]
                                     session_id=session.session_id, row_id=row.row_id, row_index=row.row_index,
                                     annotator=annotator, field=name, value=value, task_id=row.row_index,
                                     annotation_id=next_id, updated_at="2026-11-30T00:00:00+00:00",
                                     snapshot=snapshot)
                    next_id += 1
