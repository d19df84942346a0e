"""ER (Emotion Recognition): client rows whose speaker has an annotated emotion, in the last 70% of the
sample, at most 5 per sample picked evenly (spec section 4, ER)."""

from __future__ import annotations

from collections import Counter

from pipeline.benchmark_format import BenchmarkRow
from pipeline.tasks.context import SessionView, clean, parse_intensity, word_count
from pipeline.tasks.instances import TaskInstance, row_id
from pipeline.tasks.sampling import early_cutoff, pick_evenly
from pipeline.tasks.settings import ERSettings


def speaker_emotion(row: BenchmarkRow) -> tuple[str, int] | None:
    """The first internal_emotion item of the speaker with a description and an intensity in 0-10."""
    speaker = clean(row.primary_speaker)
    for item in row.internal_emotion:
        if clean(item.person) != speaker:
            continue
        description, intensity = clean(item.emotion_description), parse_intensity(item.intensity)
        if description and intensity is not None:
            return description, intensity
    return None


def current_row_fields(view: SessionView, row: BenchmarkRow) -> dict:
    """The checkpoint row as the released ER/VP records name it (`speaker`, `dialogue`)."""
    record = view.records[row.row_index - 1]
    return {
        "row_index": row.row_index,
        "timestamp": record["timestamp"],
        "speaker": record["primary_speaker"],
        "target": record["target"],
        "dialogue": record["dialogue_cleaned"],
        **{key: record[key] for key in ("background_dialogue", "tone_of_voice", "body_posture", "facial_expressions",
                                        "self_directed_behavior", "interaction_behavior")},
    }


def build_er(view: SessionView, settings: ERSettings) -> tuple[list[TaskInstance], Counter]:
    dropped: Counter = Counter()
    candidates: list[tuple[BenchmarkRow, tuple[str, int]]] = []
    for row in view.rows:
        if not view.is_client(row):
            continue
        gold = speaker_emotion(row)
        if gold is None:
            dropped["client row without a usable speaker emotion"] += 1
        elif word_count(row.dialogue_cleaned) < settings.min_dialogue_words:
            dropped[f"dialogue under {settings.min_dialogue_words} words"] += 1
        else:
            candidates.append((row, gold))
    first_row = early_cutoff(len(view.rows), settings.early_cutoff_fraction) + 1
    late = [c for c in candidates if c[0].row_index >= first_row]
    dropped["before the early cut-off"] += len(candidates) - len(late)
    picked = pick_evenly(late, settings.checkpoints_per_sample)
    dropped["over the per-sample checkpoint cap"] += len(late) - len(picked)
    instances = [
        TaskInstance(
            task="er", id=row_id(view.sample_id, row.row_index), sample_id=view.sample_id, scenario=view.scenario,
            row_index=row.row_index,
            input={**current_row_fields(view, row), "prior_context": view.prior_context(row.row_index,
                                                                                       settings.context_size)},
            gold={"internal_emotion": emotion, "intensity": intensity},
            meta={"couple": view.couple, "source_file": view.session.source_file},
        )
        for row, (emotion, intensity) in picked
    ]
    return instances, +dropped
