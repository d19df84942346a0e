"""Synthetic gold sessions of the published benchmark's shape (Table 3: 174 couple + 17 family samples,
5,875 + 1,204 rows), seeded: for the freeze benchmark and scale tests. The text is filler, the labels
are drawn from the schema's label sets; nothing here claims to look like real therapy."""

from __future__ import annotations

import random

from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession
from pipeline.schema import AnnotationSchema

SHAPE = {"couple": (174, 5875, 8.4), "family": (17, 1204, 12.0)}  # samples, rows, seconds per row
WORDS = ("feel", "never", "always", "listen", "you", "me", "we", "home", "talk", "angry", "hurt", "today",
         "again", "because", "family", "trust", "time", "work", "kids", "money", "sorry", "why", "know")
NAMES = {"couple": ("Ann", "Ben"), "family": ("Maria", "Nick", "Joel")}


def _split(total: int, parts: int, rng: random.Random) -> list[int]:
    """`parts` positive sizes around total/parts that add up to `total`."""
    mean = total / parts
    sizes = [max(8, int(rng.gauss(mean, mean / 4))) for _ in range(parts)]
    while sum(sizes) != total:
        i = rng.randrange(parts)
        step = 1 if sum(sizes) < total else -1
        if sizes[i] + step >= 8:
            sizes[i] += step
    return sizes


def _row(index: int, start: float, speaker: str, clients: tuple[str, ...], scenario: str, rng: random.Random,
         schema: AnnotationSchema) -> BenchmarkRow:
    therapist, group = schema.therapist, schema.group_labels[scenario]
    others = [c for c in clients if c != speaker]
    target = [rng.choice(clients)] if speaker == therapist else [rng.choice([therapist, *others])]
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 25)))
    fields: dict = {"start_time": round(start, 2), "end_time": round(start + rng.uniform(2.0, 14.0), 2),
                    "primary_speaker": speaker, "target": target, "dialogue_cleaned": text, "row_index": index,
                    "tone_of_voice": rng.choice(["calm", "tense", "soft", "sharp"]),
                    "body_posture": [{"person": speaker, "description": "leaning forward"}]}
    if speaker == therapist:
        if rng.random() < 0.65:
            kind = rng.choice(schema.labels("support_strategy", scenario))
            who = rng.choice([[rng.choice(clients)], [group], list(clients[:2])])
            fields["support_strategy"] = [{"provider": therapist, "target": who, "strategy_type": kind,
                                           "strategy_content": "a supportive move"}]
        fields["relation_cycle_state"] = rng.choice(["", *schema.labels("relation_pattern", scenario)])
    else:
        fields["utterance_type"] = rng.choice(schema.labels("utterance_type", scenario))
        if rng.random() < 0.8:
            fields["internal_emotion"] = [{"person": speaker, "emotion_description": "feels " + rng.choice(WORDS),
                                           "intensity": rng.randint(0, 10)}]
        if rng.random() < 0.6:
            fields["viewpoints_attitudes"] = [{"source": speaker, "target": rng.choice(others),
                                               "viewpoint": "they " + rng.choice(WORDS), "attitude": "wary"}]
        if scenario == "family":
            fields["relation_cycle_state"] = ""
    return BenchmarkRow.model_validate(fields)


def synthetic_sessions(schema: AnnotationSchema, scale: int = 1, seed: int = 7) -> list[BenchmarkSession]:
    """`scale` copies of the published benchmark's shape (191 sessions, 7,079 rows at scale 1)."""
    rng = random.Random(seed)
    sessions = []
    for scenario, (samples, rows, seconds) in SHAPE.items():
        clients = NAMES[scenario]
        share = 0.354 if scenario == "couple" else 0.471
        for n, size in enumerate(_split(rows * scale, samples * scale, rng), start=1):
            sample_id = (f"pair_{n % 60:02d}/{n:04d}_segment" if scenario == "couple"
                         else f"family_therapy/{n:04d}/merged")
            start, built = 0.0, []
            for index in range(1, size + 1):
                speaker = schema.therapist if rng.random() < share else rng.choice(clients)
                built.append(_row(index, start, speaker, clients, scenario, rng, schema))
                start += seconds
            sessions.append(BenchmarkSession(sample_id=sample_id, scenario=scenario, participants=list(clients),
                                             source_file=f"data/therapy_merged_all/{sample_id}.json", rows=built))
    return sessions
