"""Drafts only where they help, piece by piece: the session-bootstrap margin (a tiny or unstable gain is not
significant, a steady one is, and only on enough sessions), its macro-F1 equal to the scorer's, the gate's
choice between model, baseline and nothing, and the relation label read where freeze reads it (the state,
else the pattern). The gold-model's gate on the sample gold, push and acceptance are tested with the backend
(test_preannotate.py), a real Label Studio server (test_preannotate_push.py) and the agreement report
(test_preannotate_acceptance.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession
from pipeline.preannotate.baseline import field_majorities, majority_for
from pipeline.preannotate.gate import UnitAnswers, decide
from pipeline.preannotate.gold_rows import gold_values, session_entities
from pipeline.preannotate.margins import label_tally, margin, mean_tally
from pipeline.preannotate.scoring import Unit, score_unit
from pipeline.preannotate.settings import GateSettings
from pipeline.schema import load_schema

REPO = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(REPO / "annotation_schemas" / "rescue-v1.yaml")
GATE = GateSettings()
TONE = Unit("tone_of_voice", "tone_of_voice", "text")


def _rows_of(per_session: list[list[float]]) -> tuple[list[float], list[int]]:
    scores = [s for session in per_session for s in session]
    sessions = [i for i, session in enumerate(per_session) for _ in session]
    return scores, sessions


def _margin(model: list[list[float]], base: list[list[float]], settings: GateSettings = GATE):
    a, sessions = _rows_of(model)
    b, _ = _rows_of(base)
    n = len(model)
    return margin([mean_tally(a, sessions, n)], [mean_tally(b, sessions, n)], len(a),
                  samples=settings.bootstrap_samples, seed=settings.seed, level=settings.confidence)


def test_a_steady_gain_is_significant_and_a_tiny_or_unstable_one_is_not() -> None:
    base = [[0.5] * 10 for _ in range(8)]
    steady = [[0.7] * 10 for _ in range(8)]
    found = _margin(steady, base)
    assert found.value == pytest.approx(0.2) and found.low == pytest.approx(0.2) and found.sessions == 8
    assert found.significant(GATE.min_sessions)
    # +0.0004 on average, but up in half the sessions and down in the other half: the interval holds 0
    unstable = [[0.5 + (0.0504 if i % 2 else -0.0496)] * 10 for i in range(8)]
    found = _margin(unstable, base)
    assert found.value == pytest.approx(0.0004, abs=1e-4) and found.low < 0 < found.high
    assert not found.significant(GATE.min_sessions)
    # the same steady gain on 3 sessions: an interval above 0, but too few sessions to mean it
    found = _margin(steady[:3], base[:3])
    assert found.low > 0 and not found.significant(GATE.min_sessions) and found.significant(3)
    # seeded: the same answers give the same interval
    assert _margin(unstable, base) == _margin(unstable, base)


def test_the_bootstrap_resamples_sessions_not_rows() -> None:
    """One session with a large gain and seven with none: over rows the gain would look steady (80 rows), over
    sessions it rests on one session, and its interval reaches 0."""
    base = [[0.5] * 10 for _ in range(8)]
    one = [[0.9] * 10] + [[0.5] * 10 for _ in range(7)]
    found = _margin(one, base)
    assert found.value == pytest.approx(0.05) and found.low == pytest.approx(0.0) and found.rows == 80
    assert not found.significant(GATE.min_sessions)


def test_macro_f1_from_session_counts_equals_the_scorers() -> None:
    unit = Unit("utterance_type", "utterance_type", "label", labels="utterance_type")
    gold = ["accusation", "defense", "defense", "request", "request", "request", "disclosure"]
    pred = ["accusation", "request", None, "request", "defense", "request", "disclosure"]
    sessions = [0, 0, 1, 1, 2, 2, 2]
    tally = label_tally(gold, pred, sessions, 3)
    assert tally.value(np.ones((1, 3)))[0] == pytest.approx(score_unit(unit, gold, pred)["macro_f1"], abs=1e-4)
    baseline = ["request"] * len(gold)
    found = margin([tally], [label_tally(gold, baseline, sessions, 3)], len(gold), samples=200, seed=0, level=0.95)
    expected = score_unit(unit, gold, pred)["macro_f1"] - score_unit(unit, gold, baseline)["macro_f1"]
    assert found.value == pytest.approx(expected, abs=2e-4)


def _answers(model: list[str], baseline: list[str], gold: list[str], sessions: list[int]) -> dict[str, UnitAnswers]:
    found = UnitAnswers()
    for m, b, g, s in zip(model, baseline, gold, sessions):
        found.add(s, g, {"model": m, "baseline": b, "nothing": None})
    return {TONE.name: found}


def test_the_gate_drafts_the_model_only_on_a_significant_gain_else_the_better_of_baseline_and_nothing() -> None:
    sessions = [s for s in range(6) for _ in range(4)]
    gold = ["calm"] * 24
    helped = decide("tone_of_voice", [TONE], _answers(["calm"] * 24, ["tense"] * 24, gold, sessions), 6, GATE)
    # MiniLM: the same text scores 1, another text less; an empty draft scores 0 against a text
    assert helped.scores["model"] == pytest.approx(1.0, abs=1e-3) and helped.scores["nothing"] == 0.0
    assert 0.0 < helped.scores["baseline"] < 0.99 and helped.against == "baseline"
    assert helped.source == "model" and helped.margin.low > 0 and helped.margin.sessions == 6
    # the baseline answers as well as the model: no gain, and the baseline beats an empty draft
    tie = decide("tone_of_voice", [TONE], _answers(["calm"] * 24, ["calm"] * 24, gold, sessions), 6, GATE)
    assert tie.source == "baseline" and tie.against == "baseline" and "no significant gain" in tie.reason
    # empty gold texts: an empty draft scores 1, the texts 0, so nothing is drafted (a text is never worse
    # than an empty draft)
    empty = decide("tone_of_voice", [TONE], _answers(["calm"] * 24, ["tense"] * 24, [""] * 24, sessions), 6, GATE)
    assert empty.source == "nothing" and empty.scores["nothing"] == 1.0
    # a clear gain measured on 2 sessions only: not enough sessions
    few = decide("tone_of_voice", [TONE], _answers(["calm"] * 8, ["tense"] * 8, gold[:8], sessions[:8]), 2, GATE)
    assert few.source == "baseline" and "fewer than the 5" in few.reason


def _row(index: int, speaker: str, **relation: object) -> BenchmarkRow:
    return BenchmarkRow(start_time=index * 5.0, end_time=index * 5.0 + 4.0, primary_speaker=speaker, target=[],
                        dialogue_cleaned=f"row {index}", row_index=index, **relation)  # type: ignore[arg-type]


def test_the_relation_label_is_read_where_freeze_reads_it_state_else_pattern() -> None:
    session = BenchmarkSession(sample_id="family/x", scenario="couple", participants=["Maya", "Daniel"], rows=[
        _row(1, "Therapist", relation_cycle_state="", relation_pattern="pursue_withdraw",
             relation_pattern_reason="she pursues, he retreats", relation_pattern_evidence_rows=[1]),
        _row(2, "Therapist", relation_cycle_state="attack_attack", relation_cycle_reason="both blame",
             relation_pattern="pursue_withdraw"),
        _row(3, "Therapist", relation_pattern="pursue_withdraw"),  # no state at all
        _row(4, "Therapist", relation_cycle_state=""),  # no label anywhere: "no clear pattern"
    ])
    entities = session_entities(session, SCHEMA)
    values = [gold_values(SCHEMA, row, entities) for row in session.rows]
    assert [v.get("relation_cycle_state") for v in values] == ["pursue_withdraw", "attack_attack", "pursue_withdraw",
                                                              ""]
    assert values[0]["relation_cycle_reason"] == "she pursues, he retreats"
    assert values[0]["relation_cycle_evidence_rows"] == [1]
    assert values[1]["relation_cycle_reason"] == "both blame"
    # learnt from: the majority of the therapist rows' labels counts the pattern rows (2 of 4, not 1 of 2 '')
    majority = majority_for(field_majorities(SCHEMA, ["relation_cycle_state"], [session]), "relation_cycle_state",
                            "couple", True)
    assert majority is not None and (majority.value, majority.share) == ("pursue_withdraw", 0.5)
