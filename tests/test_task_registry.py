"""The task registry is the single source of what each task is: every declared task has every part, and each
part works on instances its own builder made (built from synthetic gold sessions of the benchmark's shape).

A perfect model's answer is the one thing written here per task (PERFECT): scoring it must beat an empty
answer on every formula metric the task's table shows, which exercises the builder, the answer's reading and
the scorer together."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pipeline.errors import RescueError
from pipeline.runmodel.prompts import system_prompt
from pipeline.schema import SCENARIOS, load_schema
from pipeline.tasks.answer_sites import exposure
from pipeline.tasks.build import TaskBuild, build_tasks
from pipeline.tasks.instances import TASKS
from pipeline.tasks.judge import JudgeResult
from pipeline.tasks.judge_prompt import answer_schema, checkpoint
from pipeline.tasks.modes import MODES, VIDEO_MODE
from pipeline.tasks.registry import TASK_SPECS, check_mode, task_spec
from pipeline.tasks.settings import TaskSettings
from pipeline.tasks.synthetic import synthetic_sessions

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml")

# What a model that knows the gold answers (as the task's prediction fields); the record is the instance.
PERFECT: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "er": lambda gold, record: {"predicted_internal_emotion": gold["internal_emotion"],
                                "predicted_intensity_score": gold["intensity"]},
    "vp": lambda gold, record: {"predicted_viewpoints": [{k: v[k] for k in ("source", "target", "viewpoint")}
                                                         for v in gold["viewpoints"]]},
    "rpp": lambda gold, record: {"relation_top3": [gold["relation_label"]]},
    "itp": lambda gold, record: {"should_speak": gold["should_speak"]},
    "stp": lambda gold, record: {"target_top3": [gold["target_label"]]},
    "ssp": lambda gold, record: {"strategy_top3": [gold["strategy_label"]]},
}


@cache
def built() -> TaskBuild:
    sessions = synthetic_sessions(SCHEMA)
    chosen = [s for s in sessions if s.scenario == "couple"][:4] + [s for s in sessions if s.scenario == "family"][:2]
    return build_tasks(chosen, TaskSettings(), SCHEMA)


def records(task: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """ids, model-facing records and gold records of the task's built instances."""
    instances = built().instances[task]  # type: ignore[index]
    return ([i.id for i in instances], {i.id: i.model_facing() for i in instances},
            {i.id: i.gold_record() for i in instances})


def test_every_task_is_declared_once_in_release_order() -> None:
    assert tuple(TASK_SPECS) == TASKS == tuple(PERFECT)
    assert [spec.name for spec in TASK_SPECS.values()] == list(TASKS)
    assert len({spec.title for spec in TASK_SPECS.values()}) == len(TASKS)
    with pytest.raises(RescueError, match="unknown task 'xyz'"):
        task_spec("xyz")


@pytest.mark.parametrize("task", TASKS)
def test_builder_answer_site_and_modes(task: str) -> None:
    spec = task_spec(task)
    ids, inputs, gold = records(task)
    assert ids and all(record["task"] == task for record in inputs.values())
    for record in inputs.values():  # the answer site names a row of every instance: the leak audit can work
        assert exposure(spec.answer_site, record).answer_row is not None
    assert spec.modes and set(spec.modes) <= set(MODES) and "dialogue" in spec.modes
    for mode in MODES:
        if mode in spec.modes:
            assert check_mode(task, mode) == mode
        else:
            with pytest.raises(RescueError, match="does not take input mode"):
                check_mode(task, mode)
    assert not spec.own_clip or VIDEO_MODE in spec.modes
    if spec.why_none is not None:  # the freeze's coverage line says why a sample yields none
        assert all(spec.why_none(view, TaskSettings()).startswith(" (") for view in built().views)
    if spec.published_gold is not None:  # the published file's gold comes from the release's gold keys
        assert all(set(spec.published_gold.values()) <= set(gold[i]["gold"]) for i in ids)


@pytest.mark.parametrize("task", TASKS)
def test_perfect_answers_read_cleanly_and_beat_no_answer(task: str) -> None:
    spec = task_spec(task)
    ids, inputs, gold = records(task)
    usable = {}
    for i in ids:
        fields, why = spec.prediction.normalise(PERFECT[task](gold[i]["gold"], inputs[i]), inputs[i])
        assert fields is not None and why == "", (i, why)
        usable[i], problems = spec.prediction.parse(fields, inputs[i])  # the evaluator reads a run's fields
        assert problems == [], (i, problems)
    best = spec.scoring.score(ids, usable, gold, inputs)
    worst = spec.scoring.score(ids, {}, gold, inputs)
    shown = [metric for metric in spec.scoring.headline if metric in best]
    assert shown, f"{task}: the scorer gives none of the headline metrics"
    assert all(best[m] > worst[m] for m in shown), {m: (best[m], worst[m]) for m in shown}


@pytest.mark.parametrize("task", TASKS)
def test_headline_and_board_columns_are_metrics_the_task_produces(task: str) -> None:
    spec = task_spec(task)
    ids, inputs, gold = records(task)
    produced = set(spec.scoring.score(ids, {}, gold, inputs))
    text, rubric = spec.scoring.text, spec.scoring.judge
    assert (text is None) == (rubric is None)
    if text is not None and rubric is not None:
        floor = JudgeResult(scores={i: dict(rubric.floor) for i in ids})
        produced |= {text.similarity_metric, *text.judged(ids, {}, gold, floor)}
    assert set(spec.scoring.headline) <= produced
    assert {key for key, _ in spec.board} <= produced


@pytest.mark.parametrize("task", [t for t in TASKS if task_spec(t).scoring.judge is not None])
def test_judge_rubric_grades_its_own_fields(task: str) -> None:
    rubric = task_spec(task).scoring.judge
    assert rubric is not None
    ids, inputs, gold = records(task)
    schema = answer_schema(rubric)["properties"]["graded"]["items"]
    assert set(rubric.score_fields) <= set(schema["required"])
    assert all(rubric.floor[name] in values for name, values in rubric.score_fields.items())
    usable, _ = task_spec(task).prediction.parse(PERFECT[task](gold[ids[0]]["gold"], inputs[ids[0]]), inputs[ids[0]])
    shown = checkpoint(rubric, inputs[ids[0]], gold[ids[0]], usable)
    assert shown[f"gold_{rubric.shown}"] == gold[ids[0]]["gold"][rubric.shown]
    assert shown[f"predicted_{rubric.shown}"] and rubric.has_answer(usable) and not rubric.has_answer({})


@pytest.mark.parametrize("task", TASKS)
def test_prompt_and_distribution(task: str) -> None:
    spec = task_spec(task)
    ids, inputs, gold = records(task)
    for scenario in SCENARIOS:
        prompt = system_prompt(SCHEMA, task, scenario, "dialogue")
        assert spec.title in prompt and spec.prompt.id_key in prompt and spec.prediction.answer_format in prompt
        if spec.prompt.label_set is not None:
            assert all(label in prompt for label in SCHEMA.labels(spec.prompt.label_set, scenario))
    group_labels = frozenset(SCHEMA.group_labels.values())
    for i in ids:
        order = spec.distribution.order(SCHEMA, gold[i]["scenario"])
        assert spec.distribution.category(gold[i]["gold"], group_labels) in order
    example = {"id": f"{task}-example", **spec.prediction.example}
    assert set(example) - {"id"} == set(PERFECT[task](gold[ids[0]]["gold"], inputs[ids[0]]))
