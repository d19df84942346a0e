"""The six benchmark tasks, each declared once (the inspect_ai model: dataset + solver + scorer).

A `BenchmarkTask` names everything that differs between tasks: how its instances are built from a session,
the row that holds its answer (so a prompt can be audited for leaks), what a model is asked and answers,
how an answer is read and scored, what the judge is shown, the leaderboard's columns and the release's
statistics. Code elsewhere asks `task_spec(name)` and never branches on a task's name; adding a task is
one declaration here plus its builder (tests/test_task_registry.py exercises every part of every task).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.errors import RescueError
from pipeline.schema import AnnotationSchema
from pipeline.tasks.answer_sites import AnswerSite
from pipeline.tasks.context import SessionView
from pipeline.tasks.er import build_er
from pipeline.tasks.instances import TASKS, TaskInstance, TaskName
from pipeline.tasks.itp import build_itp
from pipeline.tasks.judge_prompt import ER_JUDGE, VP_JUDGE, JudgeRubric
from pipeline.tasks.modes import MODES, VIDEO_MODE, canonical_mode
from pipeline.tasks.predictions import (
    Normalised,
    Parsed,
    Ranking,
    normalise_emotion,
    normalise_should_speak_answer,
    normalise_viewpoints,
    parse_emotion,
    parse_should_speak,
    parse_viewpoints,
)
from pipeline.tasks.rpp import build_rpp, why_no_rpp
from pipeline.tasks.scorers import (
    RankScorer,
    Scorer,
    TextScoring,
    emotion_judge_means,
    emotion_similarities,
    score_intensity,
    score_should_speak,
    score_source_target,
    viewpoint_judge_means,
    viewpoint_similarities,
)
from pipeline.tasks.settings import TaskSettings
from pipeline.tasks.ssp import build_ssp
from pipeline.tasks.stp import build_stp
from pipeline.tasks.vp import build_vp

# instances, drop reasons, and per label field how many instances it supplied (RPP; empty for the others)
Built = tuple[list[TaskInstance], Counter, Counter]
TEXT_MODES = tuple(m for m in MODES if m != VIDEO_MODE)


@dataclass(frozen=True)
class Prediction:
    """What a model answers: the fields (as the card and croissant describe them), the JSON of one answer in
    a run's prompt, an example line, and the two readings of an answer (pipeline/tasks/predictions.py)."""

    described: str
    answer_format: str
    example: dict[str, Any]
    parse: Callable[[dict[str, Any], dict[str, Any]], Parsed]
    normalise: Callable[[dict[str, Any], dict[str, Any]], Normalised]
    ranking: Ranking | None = None  # a ranking task: labels come from the instance's candidate list


@dataclass(frozen=True)
class Prompt:
    """What `rescue run-model` asks: the key that carries an instance's id, the task's instruction and the
    schema label set whose definitions the prompt lists (None: no label set)."""

    id_key: str
    instruction: str
    label_set: str | None = None


@dataclass(frozen=True)
class Scoring:
    """How `rescue evaluate` scores the task; `headline`: the metrics of its terminal table; `notes`: lines the
    report carries; `text`: the free-text scoring (similarity, judge) of ER and VP; `described`: the card's line."""

    score: Scorer
    headline: tuple[str, ...]
    described: str
    notes: dict[str, str]
    text: TextScoring | None = None
    judge: JudgeRubric | None = None


@dataclass(frozen=True)
class Distribution:
    """The release statistics' gold-label distribution: its axis, the category of one instance and the
    categories' order per scenario. `keep_empty`: list categories no instance falls in."""

    axis: str
    category: Callable[[dict[str, Any], frozenset[str]], str]  # (gold, the schema's group labels)
    order: Callable[[AnnotationSchema, str], list[str]]
    keep_empty: bool = True


@dataclass(frozen=True)
class BenchmarkTask:
    name: TaskName
    title: str
    build: Callable[[SessionView, TaskSettings], Built]
    gold_fields: str  # the card's description of gold/<task>.jsonl
    answer_site: AnswerSite
    modes: tuple[str, ...]  # the input modes it takes
    own_clip: bool  # in the video mode, the instance's own row clip is attached (SSP: it would show the answer)
    video_fps: bool  # the video mode sends the run's fps (the paper's ER/VP scripts send fps 1; SSP's none)
    prediction: Prediction
    prompt: Prompt
    scoring: Scoring
    board: tuple[tuple[str, str], ...]  # leaderboard columns: (metric key in scores.json, column name)
    old_batches_leaked: bool  # the per-sample batches before requests were audited showed its answers
    distribution: Distribution
    # why a sample yields no instance, for the freeze's coverage warnings (None: nothing more to say)
    why_none: Callable[[SessionView, TaskSettings], str] | None = None
    # the paper's published file of this task (ER/VP): its gold keys -> the release's gold keys (None: none published)
    published_gold: dict[str, str] | None = None


def _no_sources(built: tuple[list[TaskInstance], Counter]) -> Built:
    return built[0], built[1], Counter()


def _stp_kind(gold: dict[str, Any], group_labels: frozenset[str]) -> str:
    label = gold["target_label"]
    return "group label" if label in group_labels else ("subgroup" if "+" in label else "one person")


def _ranked(ranking: Ranking, example: list[str]) -> Prediction:
    """A ranking task's prediction: up to three labels from the instance's candidate list, best first."""
    return Prediction(described=f"{ranking.answer} (up to 3 labels from {ranking.candidates}, best first)",
                      answer_format=f'"{ranking.answer}": ["label", "label", "label"], "reason": "..."',
                      example={ranking.answer: example}, parse=ranking.parse, normalise=ranking.normalise,
                      ranking=ranking)


# Context rows never carry the label fields (pipeline/tasks/context.py, "context row fields"), so only ITP
# and STP answers can be shown by another instance: ITP's is who speaks at the next row, STP's the row's
# target (its gold is the first support strategy's target, which the row target mostly equals).
_TASKS = (
    BenchmarkTask(
        name="er", title="Emotion Recognition",
        build=lambda view, settings: _no_sources(build_er(view, settings.er)),
        gold_fields="`gold.internal_emotion` (text), `gold.intensity` (0-10)",
        answer_site=AnswerSite("row_index", 0, ("internal_emotion",)),
        modes=MODES, own_clip=True, video_fps=True,
        prediction=Prediction(
            described="predicted_internal_emotion (text) and predicted_intensity_score (0-10)",
            answer_format='"predicted_internal_emotion": "short phrase", "predicted_intensity_score": 0-10, '
                          '"reason": "..."',
            example={"predicted_internal_emotion": "feels dismissed and anxious about being left alone",
                     "predicted_intensity_score": 7},
            parse=parse_emotion, normalise=normalise_emotion),
        prompt=Prompt("checkpoint_id",
                      "Each target is a checkpoint: a client's row (`speaker` says `dialogue` to `target`), with the "
                      "rows before it in `prior_context`. Infer the speaker's internal emotion at this row: a short "
                      "phrase naming the specific felt emotion (e.g. \"feels dismissed and hurt\"), and its intensity "
                      "as a whole number from 0 (none) to 10 (overwhelming)."),
        scoring=Scoring(
            score_intensity,
            headline=("er_score", "emotion_score", "intensity_score", "intensity_exact", "emotion_similarity",
                      "judge_unscored"),
            described="intensity score max(1, 5 - abs(pred - gold)); MiniLM cosine similarity of the emotion text",
            notes={},
            text=TextScoring("emotion_similarity", emotion_similarities, emotion_judge_means), judge=ER_JUDGE),
        board=(("er_score", "S_ER"), ("emotion_score", "S_emo"), ("intensity_score", "S_int"),
               ("emotion_similarity", "text sim.")),
        old_batches_leaked=False,
        distribution=Distribution("gold intensity", lambda gold, _: str(gold["intensity"]),
                                  lambda schema, scenario: [str(i) for i in range(11)]),
        published_gold={"gold_internal_emotion": "internal_emotion", "gold_intensity_score": "intensity"}),
    BenchmarkTask(
        name="vp", title="Viewpoint Prediction",
        build=lambda view, settings: _no_sources(build_vp(view, settings.vp)),
        gold_fields="`gold.viewpoints` (list of source, target, viewpoint, attitude)",
        answer_site=AnswerSite("row_index", 0, ("viewpoints_attitudes",)),
        modes=MODES, own_clip=True, video_fps=True,
        prediction=Prediction(
            described="predicted_viewpoints (list of {source, target, viewpoint})",
            answer_format='"predicted_viewpoints": [{"source": "...", "target": "...", "viewpoint": "..."}], '
                          '"reason": "..."',
            example={"predicted_viewpoints": [{"source": "Maya", "target": "Daniel",
                                               "viewpoint": "he cares more about work than about her"}]},
            parse=parse_viewpoints, normalise=normalise_viewpoints),
        prompt=Prompt("checkpoint_id",
                      "Each target is a checkpoint: a client's row (`speaker` says `dialogue` to `target`), with the "
                      "rows before it in `prior_context`. Give the viewpoints the speaker holds at this row about "
                      "other people: for each, `source` (the speaker), `target` (one of `participants`, or the group "
                      "label for the whole group) and `viewpoint` (a short phrase: what the speaker thinks of or "
                      "wants from the target). Several viewpoints are allowed."),
        scoring=Scoring(
            score_source_target,
            headline=("viewpoint_total_score", "viewpoint_judge_score", "source_target_recall", "viewpoint_similarity",
                      "judge_unscored"),
            described="MiniLM similarity of each gold viewpoint to its best prediction; source-target recall",
            notes={},
            text=TextScoring("viewpoint_similarity", viewpoint_similarities, viewpoint_judge_means), judge=VP_JUDGE),
        board=(("viewpoint_judge_score", "judge 1-5"), ("viewpoint_total_score", "judge 0-6"),
               ("source_target_recall", "src-tgt R"), ("viewpoint_similarity", "text sim.")),
        old_batches_leaked=False,
        distribution=Distribution("gold viewpoints per instance",
                                  lambda gold, _: str(len(gold["viewpoints"])) if len(gold["viewpoints"]) < 3 else "3+",
                                  lambda schema, scenario: ["1", "2", "3+"]),
        published_gold={"gold_viewpoints": "viewpoints"}),
    BenchmarkTask(
        name="rpp", title="Relation Pattern Prediction",
        build=lambda view, settings: build_rpp(view, settings.rpp),
        gold_fields="`gold.relation_label` (one of `candidate_relation_labels`)",
        answer_site=AnswerSite("row_index", 0, ("relation_cycle_state", "relation_pattern")),
        modes=TEXT_MODES, own_clip=False, video_fps=False,
        prediction=_ranked(Ranking("relation_top3", "candidate_relation_labels"),
                           ["pursue_withdraw", "attack_attack", "repair_softening"]),
        prompt=Prompt("turn_id",
                      "Each target is a turn of the session (`row_index`, spoken by `target_primary_speaker`); "
                      "`prior_context` holds the rows before it (and `current_turn` the turn itself, when given). "
                      "Rank the three relation patterns from `candidate_relation_labels` that best describe how the "
                      "clients relate at this point, best first.", label_set="relation_pattern"),
        scoring=Scoring(
            RankScorer("relation_label", candidates="candidate_relation_labels"),
            headline=("accuracy", "recall_at_2", "recall_at_3", "mrr", "macro_f1"),
            described="accuracy (= recall@1), recall@2/3, MRR, macro-F1 of the top label",
            notes={"macro_f1": "macro-F1 averages top-1 F1 over the labels present in gold or predictions "
                               "(scikit-learn's macro average), not over labels nobody used"}),
        board=(("accuracy", "acc"), ("macro_f1", "macro-F1")),
        old_batches_leaked=False,
        distribution=Distribution("relation label", lambda gold, _: gold["relation_label"],
                                  lambda schema, scenario: list(schema.labels("relation_pattern", scenario))),
        why_none=lambda view, settings: why_no_rpp(view, settings.rpp)),
    BenchmarkTask(
        name="itp", title="Intervention Time Prediction",
        build=lambda view, settings: _no_sources(build_itp(view, settings.itp, settings.ids)),
        gold_fields="`gold.should_speak` (`yes` / `no`)",
        answer_site=AnswerSite("decision_after_row", 1, ("primary_speaker",), own_row_reveals=("primary_speaker",)),
        modes=TEXT_MODES, own_clip=False, video_fps=False,
        prediction=Prediction(
            described="should_speak (\"yes\" or \"no\")",
            answer_format='"should_speak": "yes" or "no", "confidence": 0-1, "reason": "..."',
            example={"should_speak": "yes"},
            parse=parse_should_speak, normalise=normalise_should_speak_answer),
        prompt=Prompt("candidate_id",
                      "Each target is a decision point right after row `decision_after_row`, the last row of "
                      "`prior_context`. Decide whether the therapist should take the next turn now (\"yes\") or "
                      "keep listening while the clients go on (\"no\"), and give your confidence from 0 to 1."),
        scoring=Scoring(
            score_should_speak,
            headline=("precision", "recall", "f1", "accuracy", "balanced_accuracy"),
            described="precision, recall, F1 of `yes`; accuracy; balanced accuracy", notes={}),
        board=(("precision", "P"), ("recall", "R"), ("f1", "F1")),
        old_batches_leaked=True,
        distribution=Distribution("should the therapist speak next?", lambda gold, _: gold["should_speak"],
                                  lambda schema, scenario: ["yes", "no"])),
    BenchmarkTask(
        name="stp", title="Support Target Prediction",
        build=lambda view, settings: _no_sources(build_stp(view, settings.stp)),
        gold_fields="`gold.target_label` (one of `candidate_target_labels`)",
        answer_site=AnswerSite("row_index", 0, ("target",)),
        modes=TEXT_MODES, own_clip=False, video_fps=False,
        prediction=_ranked(Ranking("target_top3", "candidate_target_labels"), ["Daniel", "Couple", "Maya"]),
        prompt=Prompt("turn_id",
                      "Each target is a therapist turn (`row_index`); `prior_context` holds the rows before it. Rank "
                      "the three labels from `candidate_target_labels` most likely to be whom the therapist's "
                      "supportive move at this turn addresses, best first (the group label means the couple or "
                      "family as a whole)."),
        scoring=Scoring(RankScorer("target_label"), headline=("recall_at_1", "recall_at_2", "recall_at_3", "mrr"),
                        described="recall@1/2/3, MRR over the top 3", notes={}),
        board=(("recall_at_1", "R@1"), ("mrr", "MRR")),
        old_batches_leaked=True,
        distribution=Distribution("kind of support target", _stp_kind,
                                  lambda schema, scenario: ["one person", "subgroup", "group label"],
                                  keep_empty=False)),
    BenchmarkTask(
        name="ssp", title="Support Strategy Prediction",
        build=lambda view, settings: _no_sources(build_ssp(view, settings.ssp)),
        gold_fields="`gold.strategy_label` (one of `candidate_strategy_labels`)",
        answer_site=AnswerSite("row_index", 0, ("support_strategy",)),
        modes=MODES, own_clip=False, video_fps=False,
        prediction=_ranked(Ranking("strategy_top3", "candidate_strategy_labels"), ["reframe", "track", "repair"]),
        prompt=Prompt("turn_id",
                      "Each target is a therapist turn (`row_index`) addressed to `known_support_target`; "
                      "`prior_context` holds the rows before it. Rank the three support strategies from "
                      "`candidate_strategy_labels` the therapist most likely uses at this turn, best first.",
                      label_set="support_strategy"),
        scoring=Scoring(RankScorer("strategy_label"), headline=("recall_at_1", "recall_at_2", "recall_at_3", "mrr"),
                        described="recall@1/2/3, MRR over the top 3", notes={}),
        board=(("recall_at_1", "R@1"), ("mrr", "MRR")),
        old_batches_leaked=False,
        distribution=Distribution("support strategy", lambda gold, _: gold["strategy_label"],
                                  lambda schema, scenario: list(schema.labels("support_strategy", scenario)))),
)

TASK_SPECS: dict[TaskName, BenchmarkTask] = {task.name: task for task in _TASKS}
VIDEO_TASKS = tuple(name for name, task in TASK_SPECS.items() if VIDEO_MODE in task.modes)  # ER, VP, SSP
if tuple(TASK_SPECS) != TASKS:  # the release's task order is TASKS: a declaration left out would drop a file
    raise AssertionError(f"the task registry declares {tuple(TASK_SPECS)}, not {TASKS}")


def task_spec(name: str) -> BenchmarkTask:
    try:
        return TASK_SPECS[name]  # type: ignore[index]
    except KeyError:
        raise RescueError(f"unknown task {name!r}", f"use one of {', '.join(TASKS)}") from None


def supported_modes(task: str) -> tuple[str, ...]:
    return task_spec(task).modes


def check_mode(task: str, name: str) -> str:
    """The canonical mode, or a clear error naming the modes this task supports."""
    mode = canonical_mode(name)
    if mode not in supported_modes(task):
        raise RescueError(f"task {task} does not take input mode {mode!r}",
                          f"use one of {', '.join(supported_modes(task))}")
    return mode
