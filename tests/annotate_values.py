"""Complete, valid field values for a client row and a therapist row of the couple sample.

Together the two cover every annotated field of schema rescue-v1 (client-only fields on the first,
therapist-only fields on the second), with list fields holding several items.
"""

from __future__ import annotations

from pydantic import JsonValue

COUPLE_ENTITIES = ("Maya", "Daniel", "Therapist", "Couple")


def client_values() -> dict[str, JsonValue]:
    return {
        "primary_speaker": "Maya",
        "target": ["Daniel", "Therapist"],
        "dialogue_cleaned": "With the weekend. I planned a whole day for us, and he spent it on his phone.",
        "utterance_type": "accusation",
        "background_dialogue": [{"speaker": "Daniel", "target": ["Maya"], "content": "two emails"}],
        "tone_of_voice": "sharp and hurt",
        "body_posture": [{"person": "Maya", "description": "leaning forward"},
                         {"person": "Daniel", "description": "arms crossed, turned away"}],
        "facial_expressions": [{"person": "Maya", "description": "furrowed brow"}],
        "self_directed_behavior": [{"person": "Daniel", "description": "looks at the floor"}],
        "internal_emotion": [{"person": "Maya", "emotion_description": "feels ignored and second to his work",
                              "intensity": 7},
                             {"person": "Daniel", "emotion_description": "feels accused", "intensity": 4}],
        "interaction_behavior": [{"initiator": "Maya", "target": ["Daniel"], "description": "points at him"}],
        "viewpoints_attitudes": [{"source": "Maya", "target": "Daniel", "viewpoint": "he prefers his phone to her",
                                  "attitude": "resentful"}],
    }


def therapist_values() -> dict[str, JsonValue]:
    return {
        "primary_speaker": "Therapist",
        "target": ["Couple"],
        "dialogue_cleaned": "Welcome back, both of you.",
        "background_dialogue": [],
        "tone_of_voice": "calm and warm",
        "body_posture": [{"person": "Therapist", "description": "open, leaning in"}],
        "facial_expressions": [],
        "self_directed_behavior": [],
        "internal_emotion": [{"person": "Therapist", "emotion_description": "attentive", "intensity": 3}],
        "interaction_behavior": [],
        "support_strategy": [
            {"provider": "Therapist", "target": ["Daniel"], "strategy_type": "counterbalance",
             "strategy_content": "brings the quieter partner in"},
            {"provider": "Therapist", "target": ["Couple"], "strategy_type": "track",
             "strategy_content": "names the cycle"}],
        "relation_cycle_state": "pursue_withdraw",
        "relation_cycle_reason": "she presses for contact, he retreats",
        "relation_cycle_evidence_rows": [2, 4, 5],
    }
