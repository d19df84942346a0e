"""The prompts of a model run: per task, what to predict and the JSON to answer with (spec section 4).

The system message depends only on the task, the scenario (label definitions differ) and the input mode, so
a provider's prefix cache serves it once per sample; the user message holds the batch (pipeline/runmodel/
batches.py). Label definitions and precedence rules come from the annotation schema's `label_guides`, the
same text annotators see. Change PROMPT_VERSION whenever the wording changes: it is recorded in run.json, so
runs are compared only when they asked the same question.
"""

from __future__ import annotations

from pipeline.schema import AnnotationSchema
from pipeline.tasks.instances import TASK_TITLES
from pipeline.tasks.modes import AUDIO_FIELDS, VIDEO_MODE, VISUAL_FIELDS

PROMPT_VERSION = "run-model-1"

ID_KEYS = {"er": "checkpoint_id", "vp": "checkpoint_id", "rpp": "turn_id", "stp": "turn_id", "ssp": "turn_id",
           "itp": "candidate_id"}

_TASK = {
    "er": "Each target is a checkpoint: a client's row (`speaker` says `dialogue` to `target`), with the rows "
          "before it in `prior_context`. Infer the speaker's internal emotion at this row: a short phrase naming "
          "the specific felt emotion (e.g. \"feels dismissed and hurt\"), and its intensity as a whole number "
          "from 0 (none) to 10 (overwhelming).",
    "vp": "Each target is a checkpoint: a client's row (`speaker` says `dialogue` to `target`), with the rows "
          "before it in `prior_context`. Give the viewpoints the speaker holds at this row about other people: "
          "for each, `source` (the speaker), `target` (one of `participants`, or the group label for the whole "
          "group) and `viewpoint` (a short phrase: what the speaker thinks of or wants from the target). Several "
          "viewpoints are allowed.",
    "rpp": "Each target is a turn of the session (`row_index`, spoken by `target_primary_speaker`); "
           "`prior_context` holds the rows before it (and `current_turn` the turn itself, when given). Rank the "
           "three relation patterns from `candidate_relation_labels` that best describe how the clients relate "
           "at this point, best first.",
    "itp": "Each target is a decision point right after row `decision_after_row`, the last row of "
           "`prior_context`. Decide whether the therapist should take the next turn now (\"yes\") or keep "
           "listening while the clients go on (\"no\"), and give your confidence from 0 to 1.",
    "stp": "Each target is a therapist turn (`row_index`); `prior_context` holds the rows before it. Rank the "
           "three labels from `candidate_target_labels` most likely to be whom the therapist's supportive move "
           "at this turn addresses, best first (the group label means the couple or family as a whole).",
    "ssp": "Each target is a therapist turn (`row_index`) addressed to `known_support_target`; `prior_context` "
           "holds the rows before it. Rank the three support strategies from `candidate_strategy_labels` the "
           "therapist most likely uses at this turn, best first.",
}

# One prediction of each task, as the answer's `predictions` list holds it (the id key comes first).
_FIELDS = {
    "er": '"predicted_internal_emotion": "short phrase", "predicted_intensity_score": 0-10, "reason": "..."',
    "vp": '"predicted_viewpoints": [{"source": "...", "target": "...", "viewpoint": "..."}], "reason": "..."',
    "rpp": '"relation_top3": ["label", "label", "label"], "reason": "..."',
    "itp": '"should_speak": "yes" or "no", "confidence": 0-1, "reason": "..."',
    "stp": '"target_top3": ["label", "label", "label"], "reason": "..."',
    "ssp": '"strategy_top3": ["label", "label", "label"], "reason": "..."',
}

_LABEL_SETS = {"rpp": "relation_pattern", "ssp": "support_strategy"}


def mode_note(mode: str) -> str:
    if mode == VIDEO_MODE:
        return ("The row clips (video with sound) come before this text, in order. A row record's "
                "`video_attachment_index` is the 1-based position of its clip among them. The clips replace the "
                "annotated tone of voice and visual cues.")
    shown = {"dialogue": (), "audio": AUDIO_FIELDS, "visual": VISUAL_FIELDS,
             "audiovisual": AUDIO_FIELDS + VISUAL_FIELDS}[mode]
    text = "Rows carry the transcript: speaker, target, dialogue_cleaned, background_dialogue."
    if shown:
        text += f" They also carry the annotated cues {', '.join(shown)}."
    return text


def _labels(schema: AnnotationSchema, task: str, scenario: str) -> list[str]:
    set_name = _LABEL_SETS.get(task)
    if set_name is None:
        return []
    guide = schema.label_guide(set_name, scenario)  # type: ignore[arg-type]
    lines = ["", "Label definitions:", *(f"- {label}: {text}" for label, text in guide.definitions)]
    if guide.rules:
        lines += ["Rules:", *(f"- {rule}" for rule in guide.rules)]
    return lines


def system_prompt(schema: AnnotationSchema, task: str, scenario: str, mode: str) -> str:
    key = ID_KEYS[task]
    lines = [
        f"You take the {TASK_TITLES[task]} task of a benchmark built from {scenario} therapy sessions "
        f"({schema.therapist} is the therapist; {schema.group_labels[scenario]} names the whole {scenario}).",
        _TASK[task],
        mode_note(mode),
        f"The input is one JSON object: `sample_id`, `scenario` and `targets`, a list of records, each with its "
        f"id in `{key}`.",
        "Answer with one JSON object and nothing else:",
        f'{{"sample_id": "<the sample_id given>", "predictions": [{{"{key}": "<id>", {_FIELDS[task]}}}]}}',
        f"Give exactly one prediction per target and copy each `{key}` exactly.",
    ]
    if task in ("rpp", "stp", "ssp"):
        lines.append("Use only labels from the target's candidate list, each at most once.")
    lines += _labels(schema, task, scenario)
    return "\n".join(lines)
