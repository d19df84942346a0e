"""The prompts of a model run: per task, what to predict and the JSON to answer with (spec section 4).

The system message depends only on the task, the scenario (label definitions differ) and the input mode, so
a provider's prefix cache serves it once per sample; the user message holds the batch (pipeline/runmodel/
batches.py). Label definitions and precedence rules come from the annotation schema's `label_guides`, the
same text annotators see. Change PROMPT_VERSION whenever the wording changes: it is recorded in run.json, so
runs are compared only when they asked the same question.
"""

from __future__ import annotations

from pipeline.schema import AnnotationSchema
from pipeline.tasks.modes import AUDIO_FIELDS, VIDEO_MODE, VISUAL_FIELDS
from pipeline.tasks.registry import BenchmarkTask, task_spec

PROMPT_VERSION = "run-model-1"


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


def _labels(schema: AnnotationSchema, task: BenchmarkTask, scenario: str) -> list[str]:
    set_name = task.prompt.label_set
    if set_name is None:
        return []
    guide = schema.label_guide(set_name, scenario)  # type: ignore[arg-type]
    lines = ["", "Label definitions:", *(f"- {label}: {text}" for label, text in guide.definitions)]
    if guide.rules:
        lines += ["Rules:", *(f"- {rule}" for rule in guide.rules)]
    return lines


def system_prompt(schema: AnnotationSchema, task: str, scenario: str, mode: str) -> str:
    spec = task_spec(task)
    key = spec.prompt.id_key
    lines = [
        f"You take the {spec.title} task of a benchmark built from {scenario} therapy sessions "
        f"({schema.therapist} is the therapist; {schema.group_labels[scenario]} names the whole {scenario}).",
        spec.prompt.instruction,
        mode_note(mode),
        f"The input is one JSON object: `sample_id`, `scenario` and `targets`, a list of records, each with its "
        f"id in `{key}`.",
        "Answer with one JSON object and nothing else:",
        f'{{"sample_id": "<the sample_id given>", "predictions": [{{"{key}": "<id>", '
        f'{spec.prediction.answer_format}}}]}}',
        f"Give exactly one prediction per target and copy each `{key}` exactly.",
    ]
    if spec.prediction.ranking is not None:
        lines.append("Use only labels from the target's candidate list, each at most once.")
    lines += _labels(schema, spec, scenario)
    return "\n".join(lines)
