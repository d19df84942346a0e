"""Hand-made gold sessions for the task tests, shaped like the released `alan_and_evelyn/001…` sample.

The 16 rows reproduce the speaker pattern the spec's worked checks rely on (therapist rows 3, 5, 10, 12,
14, 16), with invented dialogue. Expected instances in the tests are worked out by hand from these rows.
"""

from __future__ import annotations

from typing import Any

from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession

SAMPLE_ID = "alan_and_evelyn/001_s01e01_ct25_segment04"
LONG = "I keep telling you the same thing again and again"  # 10 words
SHORT = "Yeah, right."  # 2 words


def row(index: int, speaker: str, target: list[str], text: str = LONG, **fields: Any) -> dict[str, Any]:
    start = float(index * 5)
    return {"start_time": start, "end_time": start + 4.5, "primary_speaker": speaker, "target": target,
            "dialogue_cleaned": text, "row_index": index,
            "tone_of_voice": f"tone {index}",
            "body_posture": [{"person": speaker, "description": f"posture {index}"}], **fields}


def emotion(person: str, text: str, intensity: Any) -> dict[str, Any]:
    return {"person": person, "emotion_description": text, "intensity": intensity}


def view(source: str, target: str, text: str) -> dict[str, Any]:
    return {"source": source, "target": target, "viewpoint": text, "attitude": "resentful"}


def strategy(target: list[str], kind: str) -> list[dict[str, Any]]:
    return [{"provider": "Therapist", "target": target, "strategy_type": kind, "strategy_content": f"does {kind}"}]


def alan_and_evelyn_rows() -> list[dict[str, Any]]:
    T = "Therapist"
    return [
        row(1, "Alan", [T], internal_emotion=[emotion("Alan", "feels hopeless", 6)]),
        row(2, "Alan", [T], internal_emotion=[emotion("Alan", "feels blamed", 7)],
            viewpoints_attitudes=[view("Alan", "Evelyn", "she is never happy")],
            relation_pattern="attack_attack"),
        row(3, T, ["Alan"], support_strategy=strategy(["Alan"], "evoke"), relation_cycle_state="attack_attack"),
        row(4, "Alan", [T], SHORT, internal_emotion=[emotion("Alan", "feels certain", 5)]),
        row(5, T, ["Evelyn"], support_strategy=strategy(["Evelyn"], "counterbalance"),
            relation_cycle_state="attack_attack"),
        row(6, "Evelyn", [T], internal_emotion=[emotion("Evelyn", "feels mischaracterized", "7")],
            viewpoints_attitudes=[view("Evelyn", "Alan", "he twists her words")]),
        # Row 7: only someone else's emotion and a non-speaker viewpoint first -> ER skips it, VP keeps it.
        row(7, "Evelyn", [T], internal_emotion=[emotion("Alan", "feels attacked", 6)],
            viewpoints_attitudes=[view("Alan", "Evelyn", "x"), view("Evelyn", "Alan", "he never follows through")]),
        row(8, "Evelyn", ["Alan"], internal_emotion=[emotion("Evelyn", "feels let down", 8.4)],
            viewpoints_attitudes=[view("Evelyn", "Alan", "he says one thing and does another")]),
        row(9, "Evelyn", [T], internal_emotion=[emotion("Evelyn", "", 3), emotion("Evelyn", "feels sad", 6.5)],
            viewpoints_attitudes=[view("Evelyn", "Alan", "he does not know what he wants")]),
        row(10, T, ["Evelyn"], relation_cycle_state=""),
        row(11, "Alan", [T], SHORT, internal_emotion=[emotion("Alan", "feels defensive", 6)]),
        row(12, T, ["Alan", "Evelyn"], support_strategy=strategy(["Alan", "Evelyn"], "reframe"),
            relation_cycle_state="pursue_withdraw"),
        row(13, "Evelyn", [T], SHORT, relation_cycle_state="repair_softening"),
        row(14, T, ["Evelyn"], support_strategy=strategy([T], "validation"), relation_cycle_state="blame_spiral"),
        row(15, "Alan", [T], internal_emotion=[emotion("Alan", "feels unsure", 12)]),
        row(16, T, ["Alan"], support_strategy=strategy([], "")),
    ]


def session(rows: list[dict[str, Any]] | None = None, sample_id: str = SAMPLE_ID, scenario: str = "couple",
            participants: list[str] | None = None) -> BenchmarkSession:
    data = rows if rows is not None else alan_and_evelyn_rows()
    return BenchmarkSession(sample_id=sample_id, scenario=scenario, participants=participants or ["Alan", "Evelyn"],
                            source_file=f"data/therapy_merged_all/{sample_id}.json",
                            rows=[BenchmarkRow.model_validate(r) for r in data])
