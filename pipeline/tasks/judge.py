"""The optional ER/VP judge of `rescue evaluate` (spec section 4): an LLM grades each checkpoint's text.

ER: `emotion_score` 1-5 per checkpoint from the judge; the intensity is scored by formula elsewhere and
S_ER = (S_emo + S_int) / 2. VP: the released script's `source_target_score` 0-2 + `viewpoint_score` 0-4
(`viewpoint_total_score` 0-6) and the paper's 1-5 (`overall_score`). One request per sample, through the
shared chat client (pipeline/llm: cache by request hash, bounded concurrency, retries, budget).

An instance without a usable answer is not sent: it gets the scale's floor (ER 1; VP 0, 0 and 1), as a
missing intensity does. A judge answer that cannot be read (not JSON, a checkpoint left out, a score
off the scale) is recorded with the reason and that checkpoint stays unscored: it is left out of the
judge's means and counted (`judge_unscored`), never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.llm.client import ChatClient, ChatRunStats, NotSent
from pipeline.tasks.judge_prompt import JUDGE_PROMPT_VERSION, VERDICTS, JudgeRubric, checkpoint, sample_request
from pipeline.tasks.judge_settings import SECTION, JudgeSettings

SHOWN_CHARS = 200  # of an unreadable answer, kept in the report


@dataclass(frozen=True)
class JudgeOptions:
    settings: JudgeSettings
    cache_folder: Path | None  # build/llm-cache (None: no cache)
    environ: Mapping[str, str] | None = None  # where the key is read (None: the process environment)


@dataclass
class JudgeResult:
    scores: dict[str, dict[str, int]] = field(default_factory=dict)  # id -> the judge's integer fields
    by_rule: set[str] = field(default_factory=set)  # ids given the floor without asking (no usable answer)
    unscored: list[dict[str, str]] = field(default_factory=list)  # {"id", "problem"}: left out, never guessed
    stats: ChatRunStats = field(default_factory=ChatRunStats)

    def describe(self, settings: JudgeSettings) -> dict[str, Any]:
        return {"model": settings.model, "endpoint_host": settings.endpoint_host, "prompt_version": JUDGE_PROMPT_VERSION,
                "requests": self.stats.requests, "answered": self.stats.answers, "from_cache": self.stats.cache_hits,
                "tokens": self.stats.tokens, "judged": len(self.scores) - len(self.by_rule),
                "floor_without_answer": len(self.by_rule), "unscored": self.unscored}


def _read_graded(judge: JudgeRubric, content: str,
                 asked: list[str]) -> tuple[dict[str, dict[str, int]], list[dict[str, str]]]:
    """The scores of the asked checkpoints an answer gives, and a problem for each one it does not."""
    try:
        answer = json.loads(content)
        graded = answer["graded"]
        if not isinstance(graded, list):
            raise TypeError("graded is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        shown = content[:SHOWN_CHARS] + ("…" if len(content) > SHOWN_CHARS else "")
        problem = f"the judge's answer is not a JSON object with a `graded` list ({exc}): {shown!r}"
        return {}, [{"id": i, "problem": problem} for i in asked]
    found: dict[str, dict[str, int]] = {}
    problems: list[dict[str, str]] = []
    for item in graded:
        cid = item.get("checkpoint_id") if isinstance(item, dict) else None
        if cid not in asked or cid in found:
            continue  # an id nobody asked about (or graded twice): the asked one is judged on its first grade
        wrong = [f"{name} {item.get(name)!r} is not one of {list(values)}"
                 for name, values in judge.score_fields.items()
                 if isinstance(item.get(name), bool) or item.get(name) not in values]
        if judge.verdict and item.get("verdict") not in VERDICTS:
            wrong.append(f"verdict {item.get('verdict')!r} is not one of {list(VERDICTS)}")
        if wrong:
            problems.append({"id": cid, "problem": "the judge's grade is unusable: " + "; ".join(wrong)})
            found[cid] = {}
            continue
        found[cid] = {name: int(item[name]) for name in judge.score_fields}
    problems += [{"id": i, "problem": "the judge's answer leaves this checkpoint out"} for i in asked if i not in found]
    return {i: s for i, s in found.items() if s}, problems


def judge_instances(judge: JudgeRubric, ids: list[str], usable: Mapping[str, dict[str, Any]], gold: Mapping[str, dict],
                    inputs: Mapping[str, dict], options: JudgeOptions) -> JudgeResult:
    """Grades of every id in `ids` by the task's `judge` (ER or VP), batched per sample in instance order."""
    result = JudgeResult()
    by_sample: dict[str, list[str]] = {}
    for i in ids:
        if judge.has_answer(usable.get(i)):
            by_sample.setdefault(gold[i]["sample_id"], []).append(i)
        else:
            result.scores[i] = dict(judge.floor)
            result.by_rule.add(i)
    if not by_sample:
        return result
    client = ChatClient(options.settings, options.cache_folder, section=SECTION, environ=options.environ)
    samples = list(by_sample)
    requests = [sample_request(judge, s, [checkpoint(judge, inputs[i], gold[i], usable[i]) for i in by_sample[s]])
                for s in samples]
    outcomes, result.stats = client.complete_all(requests)
    for sample, outcome in zip(samples, outcomes):
        asked = by_sample[sample]
        if isinstance(outcome, NotSent):
            result.unscored += [{"id": i, "problem": f"not judged: {outcome.reason}"} for i in asked]
            continue
        if outcome.problem:
            result.unscored += [{"id": i, "problem": f"not judged: {outcome.problem}"} for i in asked]
            continue
        scores, problems = _read_graded(judge, outcome.content, asked)
        result.scores.update(scores)
        result.unscored += problems
    return result
