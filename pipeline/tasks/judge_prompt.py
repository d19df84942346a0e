"""What the ER/VP judge is asked (spec section 4): the paper's rubric, one request per sample holding all its
checkpoints, the answer's JSON schema. Changing a prompt changes every request hash (the cache misses
on purpose) and must bump JUDGE_PROMPT_VERSION, which scores.json records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pipeline.llm.content import ChatMessage
from pipeline.llm.request import ChatRequest, ResponseSchema

JUDGE_PROMPT_VERSION = "judge-v1"
VERDICTS = ("strong", "pass", "borderline", "fail")

ER_RUBRIC = """You grade answers of an emotion-recognition benchmark built from therapy-session transcripts.
For each checkpoint you get the speaker, what they said, the gold internal emotion written by human annotators
and a model's predicted internal emotion. Grade how well the predicted emotion matches the gold emotion:
emotion_score 1 = wrong or contradictory, 2 = weakly related, 3 = partial, 4 = close, 5 = almost exact.
Be lenient with paraphrase: judge the meaning, not the wording.
verdict: strong, pass, borderline or fail (your overall judgement of the prediction). notes: one short sentence.
Answer with one JSON object {"sample_id": ..., "graded": [{"checkpoint_id", "emotion_score", "verdict",
"notes"}]}, one entry per checkpoint, echoing each checkpoint_id exactly."""

VP_RUBRIC = """You grade answers of a viewpoint-prediction benchmark built from therapy-session transcripts.
For each checkpoint you get the speaker, what they said, the gold viewpoints written by human annotators
(source, target, viewpoint, attitude) and a model's predicted viewpoints (source, target, viewpoint).
source_target_score: 0 = wrong or missing, 1 = partial, 2 = all gold source-target pairs recovered.
viewpoint_score: how well the predicted viewpoints match the gold viewpoints' meaning: 0 = wrong or
contradictory, 1 = weakly related, 2 = partial, 3 = close, 4 = almost exact.
overall_score: the whole prediction, 1 = wrong or contradictory, 2 = weakly related, 3 = partial, 4 = close,
5 = almost exact. Be lenient with paraphrase: judge the meaning, not the wording. notes: one short sentence.
Answer with one JSON object {"sample_id": ..., "graded": [{"checkpoint_id", "source_target_score",
"viewpoint_score", "overall_score", "notes"}]}, one entry per checkpoint, echoing each checkpoint_id exactly."""


@dataclass(frozen=True)
class JudgeRubric:
    """One task's judge: its rubric, the integer fields of one graded checkpoint and the values each may take,
    the floor an instance without an answer gets, and which gold and answer text the judge is shown
    (`gold_<shown>` from gold[`shown`], `predicted_<shown>` from the usable answer's `answer_key`)."""

    name: str  # the answer schema's name: <task>_judge
    rubric: str
    score_fields: dict[str, tuple[int, ...]]
    floor: dict[str, int]
    shown: str
    answer_key: str
    answer_default: Any
    verdict: bool = False  # the judge also gives one of VERDICTS

    def has_answer(self, usable: dict[str, Any] | None) -> bool:
        return bool(usable and usable.get(self.answer_key))


ER_JUDGE = JudgeRubric("er_judge", ER_RUBRIC, {"emotion_score": (1, 2, 3, 4, 5)}, {"emotion_score": 1},
                       shown="internal_emotion", answer_key="emotion", answer_default="", verdict=True)
VP_JUDGE = JudgeRubric("vp_judge", VP_RUBRIC, {"source_target_score": (0, 1, 2), "viewpoint_score": (0, 1, 2, 3, 4),
                                               "overall_score": (1, 2, 3, 4, 5)},
                       {"source_target_score": 0, "viewpoint_score": 0, "overall_score": 1},
                       shown="viewpoints", answer_key="viewpoints", answer_default=[])


def answer_schema(judge: JudgeRubric) -> dict[str, Any]:
    """Strict structured output: every property required, nothing else allowed."""
    item: dict[str, Any] = {"checkpoint_id": {"type": "string"}}
    item.update({name: {"type": "integer", "enum": list(values)} for name, values in judge.score_fields.items()})
    if judge.verdict:
        item["verdict"] = {"type": "string", "enum": list(VERDICTS)}
    item["notes"] = {"type": "string"}
    graded = {"type": "object", "additionalProperties": False, "required": list(item), "properties": item}
    return {"type": "object", "additionalProperties": False, "required": ["sample_id", "graded"],
            "properties": {"sample_id": {"type": "string"}, "graded": {"type": "array", "items": graded}}}


def checkpoint(judge: JudgeRubric, instance: dict[str, Any], gold: dict[str, Any],
               usable: dict[str, Any]) -> dict[str, Any]:
    """One checkpoint as the judge sees it: the gold and the model's answer, nothing the model did not see."""
    shown: dict[str, Any] = {"checkpoint_id": instance["id"], "speaker": instance.get("speaker", ""),
                             "dialogue": instance.get("dialogue", "")}
    shown[f"gold_{judge.shown}"] = gold["gold"][judge.shown]
    shown[f"predicted_{judge.shown}"] = usable.get(judge.answer_key, judge.answer_default)
    return shown


def sample_request(judge: JudgeRubric, sample_id: str, checkpoints: list[dict[str, Any]]) -> ChatRequest:
    body = json.dumps({"sample_id": sample_id, "checkpoints": checkpoints}, ensure_ascii=False, sort_keys=True)
    return ChatRequest((ChatMessage.text("system", judge.rubric), ChatMessage.text("user", body)),
                       ResponseSchema(judge.name, answer_schema(judge)), label=sample_id)
