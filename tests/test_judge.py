"""`rescue evaluate` on a model-run folder (scores.json, unanswered ids, the video mode, the release check) and
the optional ER/VP judge.

No judge model is reachable from the test machines: `tests/chat_server.py` stands in for the remote judge
(a real HTTP server on 127.0.0.1 speaking the chat-completions contract). Its grades are decided here: 5 for
a prediction equal to the gold text, 1 otherwise, and a broken answer where the test wants one. The run
folders are written by the tests in the layout `rescue run-model` writes (pipeline/layout.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import RescueError
from pipeline.tasks.judge import JudgeOptions
from pipeline.tasks.judge_settings import JudgeSettings
from pipeline.tasks.runs import read_run, score_run
from tests.chat_server import ChatServer, Received, Reply
from tests.tasks_rows import SAMPLE_ID
from tests.release_inputs import FAMILY, ids
from tests.run_folders import make_run, media_release

KEY = "sk-judge-test-5d2a9c71e04b4f3a"
ENV = {"JUDGE_KEY": KEY}


def grade_exact(received: Received) -> Reply:
    """The stand-in judge: 5 when the prediction is the gold text, else 1 (ER); VP: full marks or the floor."""
    asked = json.loads(received.body["messages"][-1]["content"])
    graded = []
    for c in asked["checkpoints"]:
        if "gold_internal_emotion" in c:
            same = c["predicted_internal_emotion"] == c["gold_internal_emotion"]
            graded.append({"checkpoint_id": c["checkpoint_id"], "emotion_score": 5 if same else 1,
                           "verdict": "strong" if same else "fail", "notes": ""})
        else:
            same = [v["viewpoint"] for v in c["predicted_viewpoints"]] == [v["viewpoint"] for v in c["gold_viewpoints"]]
            graded.append({"checkpoint_id": c["checkpoint_id"], "source_target_score": 2 if same else 1,
                           "viewpoint_score": 4 if same else 0, "overall_score": 5 if same else 1, "notes": ""})
    return Reply(content=json.dumps({"sample_id": asked["sample_id"], "graded": graded}))


def judge(server: ChatServer, cache: Path | None, environ: dict[str, str] = ENV, **changes: Any) -> JudgeOptions:
    settings = JudgeSettings(base_url=server.base_url, model="judge-stand-in", api_key_env="JUDGE_KEY",
                             backoff_s=0.01, **changes)
    return JudgeOptions(settings, cache, environ)


def test_a_run_folder_is_scored_with_unanswered_ids_as_missing(release: Path, tmp_path: Path) -> None:
    i = ids(release, "stp")
    run = make_run(tmp_path / "runs" / "r1", release, "stp", [
        {"id": i[(SAMPLE_ID, 3)], "target_top3": ["Alan", "Evelyn", "Couple"]},      # rank 1
        {"id": i[(SAMPLE_ID, 5)], "target_top3": ["Alan", "Evelyn", "Couple"]},      # rank 2
        {"id": i[(SAMPLE_ID, 12)], "target_top3": ["Couple", "Alan", "Evelyn"]},     # rank 1, but the run said unusable
        {"id": i[(FAMILY, 3)], "target_top3": ["Family"]},                           # rank 1
    ], [{"id": i[(SAMPLE_ID, 12)], "reason": "invalid JSON"}, {"id": i[(SAMPLE_ID, 14)], "reason": "id dropped"},
        {"id": i[(FAMILY, 5)], "reason": "id dropped"}])
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    scores = score_run(read_run(run), release, text_similarity=False)
    overall = scores["scores"]["overall"]
    # 6 instances: ranks 1, 2, (unanswered), (unanswered), 1, (unanswered) -> R@1 2/6, MRR (1 + 1/2 + 1) / 6
    assert overall["recall_at_1"] == round(2 / 6, 4) and overall["mrr"] == round(2.5 / 6, 4)
    assert scores["scores"]["family"]["recall_at_1"] == 0.5
    assert scores["unanswered"]["count"] == 3
    assert scores["unanswered"]["by_reason"] == {"id dropped": 2, "invalid JSON": 1}
    assert scores["unanswered"]["also_in_predictions"] == [i[(SAMPLE_ID, 12)]]
    written = json.loads((run / "scores.json").read_text())
    assert written == scores and written["run_id"] == "r1" and written["model"] == "model-a"
    assert (written["task"], written["mode"], written["release"]["version"]) == ("stp", "dialogue", "v1")
    # Re-scoring replaces scores.json and sample_scores.jsonl (derived) and touches nothing else.
    (run / "scores.json").write_text("stale")
    score_run(read_run(run), release, text_similarity=False)
    assert json.loads((run / "scores.json").read_text()) == scores
    derived = ("scores.json", "sample_scores.jsonl")
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.name not in derived} == before
    assert sorted(p.name for p in run.iterdir()) == ["predictions.jsonl", "run.json", "sample_scores.jsonl",
                                                     "scores.json", "unanswered.jsonl"]


def test_a_video_mode_run_is_scored_over_the_instances_in_that_mode(release: Path,
                                                                    tmp_path: Path) -> None:
    media = media_release(release, tmp_path / "v1")
    i = ids(media, "ssp")
    run = make_run(tmp_path / "runs" / "video", media, "ssp", [
        {"id": i[(SAMPLE_ID, 3)], "strategy_top3": ["evoke"]},             # right
        {"id": i[(SAMPLE_ID, 5)], "strategy_top3": ["track"]},             # wrong
    ], [], mode="turn_video_audio")                                        # couple row 12 missing
    scores = score_run(read_run(run), media, text_similarity=False)
    assert scores["instances_in_mode"] == 3 and scores["left_out_by_mode"] == 2
    assert "2 of the 5 SSP instances have no clip" in scores["mode_note"]
    assert scores["scores"]["overall"]["instances"] == 3 and "family" not in scores["scores"]
    assert scores["scores"]["overall"]["recall_at_1"] == round(1 / 3, 4)
    assert scores["problems"]["missing_ids"] == [i[(SAMPLE_ID, 12)]]  # the family ones are not "missing"


def test_a_run_on_another_release_or_without_run_json_is_refused(release: Path, tmp_path: Path) -> None:
    media = media_release(release, tmp_path / "v1")
    run = make_run(tmp_path / "runs" / "r", media, "ssp", [], [])
    with pytest.raises(RescueError, match=r"was made on release v1 \(manifest_sha256 .*\), but .* is release v1 "
                                          r"\(manifest_sha256") as e:
        score_run(read_run(run), release, text_similarity=False)
    assert "--release" in e.value.fix
    assert not (run / "scores.json").exists()
    (run / "run.json").unlink()
    with pytest.raises(RescueError, match=r"run.json is missing: .* is not a finished model run"):
        read_run(run)
    result = CliRunner().invoke(main, ["evaluate", "--run", str(run), "--release", str(release)])
    assert result.exit_code == 1 and "run.json is missing" in result.output


def test_a_run_whose_every_instance_went_unanswered_scores_zero(release: Path, tmp_path: Path) -> None:
    everything = [{"id": x, "reason": "budget reached"} for x in ids(release, "itp").values()]
    run = make_run(tmp_path / "r", release, "itp", [], everything, record={"task": "itp"})  # a minimal run.json
    scores = score_run(read_run(run), release, text_similarity=False)
    assert scores["scores"]["overall"]["recall"] == 0.0 and scores["unanswered"]["by_reason"] == {"budget reached": 10}
    assert (scores["model"], scores["mode"]) == ("unknown", "unknown") and "not checked" in scores["release_check"]


def test_the_judge_grades_er_and_s_er_follows_the_formula(release: Path, tmp_path: Path) -> None:
    i = ids(release, "er")
    run = make_run(tmp_path / "r", release, "er", [
        {"id": i[(SAMPLE_ID, 6)], "predicted_internal_emotion": "feels mischaracterized",
         "predicted_intensity_score": 7},                                   # S_emo 5, S_int 5 -> S_ER 5
        {"id": i[(SAMPLE_ID, 8)], "predicted_internal_emotion": "feels angry",
         "predicted_intensity_score": 6},                                   # S_emo 1, S_int 3 -> S_ER 2
    ], [{"id": i[(SAMPLE_ID, 9)], "reason": "id dropped"}])                # floor: S_emo 1, S_int 1 -> S_ER 1
    with ChatServer(grade_exact, api_key=KEY) as server:
        scores = score_run(read_run(run), release, text_similarity=False, judge=judge(server, tmp_path / "cache"))
        assert len(server.received) == 1  # one request per sample; the unanswered one is not sent
        sent = json.loads(server.bodies()[0]["messages"][1]["content"])
        assert [c["checkpoint_id"] for c in sent["checkpoints"]] == [i[(SAMPLE_ID, 6)], i[(SAMPLE_ID, 8)]]
        assert "predicted_intensity_score" not in json.dumps(sent)  # intensity is scored by formula, not judged
        again = score_run(read_run(run), release, text_similarity=False, judge=judge(server, tmp_path / "cache"))
        assert len(server.received) == 1  # the second scoring asked nothing: the answer is cached
    overall = scores["scores"]["overall"]
    assert overall["emotion_score"] == round((5 + 1 + 1) / 3, 4)
    assert overall["er_score"] == round((5 + 2 + 1) / 3, 4)
    assert overall["judge_unscored"] == 0 and scores["text_scorer"] == "judge (judge-stand-in)"
    assert scores["judge"]["judged"] == 2 and scores["judge"]["floor_without_answer"] == 1
    assert again["scores"] == scores["scores"] and again["judge"]["from_cache"] == 1


def test_unreadable_judge_answers_are_reported_never_guessed(release: Path, tmp_path: Path) -> None:
    v = ids(release, "vp")
    predictions = [{"id": v[(SAMPLE_ID, 2)], "predicted_viewpoints": [{"target": "Evelyn",
                                                                        "viewpoint": "she is never happy"}]}]
    run = make_run(tmp_path / "vp", release, "vp", predictions, [])
    with ChatServer(lambda r: Reply(content='{"graded": [ {"checkpoint_id": '), api_key=KEY) as server:
        scores = score_run(read_run(run), release, text_similarity=False, judge=judge(server, None))
    overall = scores["scores"]["overall"]
    # Row 2 was asked and the answer is cut off: unscored. Rows 6-9 have no answer: the floor (0, 0, 1).
    assert overall["judge_unscored"] == 1 and overall["judge_scored"] == 4
    assert overall["viewpoint_total_score"] == 0.0 and overall["viewpoint_judge_score"] == 1.0
    [unscored] = scores["judge"]["unscored"]
    assert unscored["id"] == v[(SAMPLE_ID, 2)] and "not a JSON object with a `graded` list" in unscored["problem"]
    assert '{"graded": [ {"checkpoint_id": ' in unscored["problem"]  # the answer itself is recorded
    i = ids(release, "er")
    er_run = make_run(tmp_path / "er", release, "er", [
        {"id": i[(SAMPLE_ID, r)], "predicted_internal_emotion": "feels sad", "predicted_intensity_score": 6}
        for r in (6, 8, 9)], [])

    def off_scale(received: Received) -> Reply:
        answer = json.loads(grade_exact(received).content or "")
        answer["graded"][0]["emotion_score"] = 9     # row 6: off the scale
        del answer["graded"][1]                      # row 8: left out
        return Reply(content=json.dumps(answer))

    with ChatServer(off_scale, api_key=KEY) as server:
        er = score_run(read_run(er_run), release, text_similarity=False, judge=judge(server, None))
    problems = {u["id"]: u["problem"] for u in er["judge"]["unscored"]}
    assert problems == {i[(SAMPLE_ID, 6)]: "the judge's grade is unusable: emotion_score 9 is not one of "
                                           "[1, 2, 3, 4, 5]",
                        i[(SAMPLE_ID, 8)]: "the judge's answer leaves this checkpoint out"}
    # only row 9 is judged: "feels sad" is its gold text (5), intensity 6 = gold (5)
    assert er["scores"]["overall"]["emotion_score"] == 5.0 and er["scores"]["overall"]["er_score"] == 5.0


def test_judge_endpoint_down_or_key_missing_is_a_clear_error(release: Path, tmp_path: Path) -> None:
    i = ids(release, "er")
    run = make_run(tmp_path / "r", release, "er", [{"id": i[(SAMPLE_ID, 6)], "predicted_internal_emotion": "x",
                                                    "predicted_intensity_score": 1}], [])
    with ChatServer(grade_exact, api_key=KEY) as server:
        with pytest.raises(RescueError, match=r"API key .* is missing: environment variable JUDGE_KEY \(setting "
                                              r"\[tool.rescue.judge\] api_key_env\)"):
            score_run(read_run(run), release, text_similarity=False, judge=judge(server, None, environ={}))
        down = judge(server, None, max_retries=1)
    with pytest.raises(RescueError, match=r"cannot reach the chat endpoint .* \(setting \[tool.rescue.judge\] "
                                          r"base_url\)"):
        score_run(read_run(run), release, text_similarity=False, judge=down)  # the server has stopped
    assert not (run / "scores.json").exists()


def test_the_cli_scores_a_run_and_says_which_text_scorer_it_used(release: Path, tmp_path: Path) -> None:
    i = ids(release, "er")
    run = make_run(tmp_path / "r", release, "er", [{"id": i[(SAMPLE_ID, 6)], "predicted_internal_emotion":
                                                    "feels mischaracterized", "predicted_intensity_score": 7}],
                   [{"id": i[(SAMPLE_ID, 8)], "reason": "invalid JSON"}])
    plain = CliRunner().invoke(main, ["--root", str(tmp_path), "evaluate", "--run", str(run), "--release",
                                      str(release), "--no-similarity"])
    assert plain.exit_code == 0, plain.output
    assert "1 instance(s) the run got no usable answer for (scored as missing): 1 invalid JSON" in plain.output
    assert "ER/VP text scorer: none" in plain.output
    with ChatServer(grade_exact) as server:  # a local judge that needs no key
        (tmp_path / "pyproject.toml").write_text('[tool.rescue.judge]\napi_key_env = ""\n')
        judged = CliRunner().invoke(main, ["--root", str(tmp_path), "evaluate", "--run", str(run), "--release",
                                           str(release), "--no-similarity", "--judge-model", "judge-stand-in",
                                           "--judge-base-url", server.base_url])
    assert judged.exit_code == 0, judged.output
    assert "ER/VP text scorer: judge (judge-stand-in)" in judged.output
    assert json.loads((run / "scores.json").read_text())["scores"]["overall"]["emotion_score"] == round(7 / 3, 4)
    assert list((tmp_path / "build" / "llm-cache").glob("*.json"))  # the judge's answer is cached under build/
