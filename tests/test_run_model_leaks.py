"""Model runs that cannot see their answers (issue 20, part 1), against the stand-in chat server.

Instances of one sample share rows: an ITP instance's answer is who speaks at the row after its decision row,
and a later instance's `prior_context` holds that row with its `primary_speaker`; an STP instance's answer is
its row's target, and a later instance's context holds that row with its `target`. The checks here find
leaks in what the server received, on their own: the answer row of each instance comes from the gold file
(ITP `meta.next_row_index`, STP `row_index`), not from pipeline/tasks/answer_sites.py.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.layout import RUN_RECORD, RUN_SCORES, RUN_UNANSWERED
from pipeline.project import Project
from pipeline.runmodel.audit import audit_payload, gate
from pipeline.runmodel.batches import Batch, batch_request
from pipeline.runmodel.prompts import system_prompt
from pipeline.runmodel.run import run_model
from pipeline.runmodel.settings import RunModelSettings
from pipeline.tasks.runs import read_run, score_run
from tests.chat_server import ChatServer, Received, Reply
from tests.release_inputs import SCHEMA
from tests.run_folders import make_run
from tests.run_model_releases import answer_rows, leaking_pair, self_leaking_release
from tests.stand_in_model import ENV, KEY, KEY_ENV, answer, asked, gold, itp_truthful, lines, records, settings

ID = {"itp": "candidate_id", "stp": "turn_id", "er": "checkpoint_id", "vp": "checkpoint_id", "rpp": "turn_id",
      "ssp": "turn_id"}
REVEALS = {"itp": "primary_speaker", "stp": "target"}  # the field of the answer row that gives it away


def visible(task: str, targets: list[dict[str, Any]], rows: dict[str, int]) -> set[tuple[str, str]]:
    """(seer, owner): a target whose context shows the owner's answer row with its revealing field."""
    shown = {t[ID[task]]: {r["row_index"] for r in t.get("prior_context", []) if REVEALS[task] in r} for t in targets}
    return {(seer, owner[ID[task]]) for owner in targets for seer, seen in shown.items()
            if rows[owner[ID[task]]] in seen}


def visible_in(task: str, body: dict[str, Any], rows: dict[str, int]) -> set[tuple[str, str]]:
    return visible(task, asked(body)["targets"], rows)


def paper_groups(task_records: list[dict[str, Any]], size: int) -> list[tuple[str, ...]]:
    """The paper's grouping: per sample, in file order, chunks of `size`."""
    by_sample: dict[str, list[str]] = {}
    for record in task_records:
        by_sample.setdefault(record["sample_id"], []).append(record["id"])
    return sorted(tuple(ids[i:i + size]) for ids in by_sample.values() for i in range(0, len(ids), size))


def sent_groups(task: str, bodies: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return sorted(tuple(t[ID[task]] for t in asked(b)["targets"]) for b in bodies)


def truthful(task: str, truth: dict[str, dict[str, Any]]) -> Callable[[Received], Reply]:
    if task == "itp":
        return itp_truthful(truth)

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        return answer(document["sample_id"], [{"turn_id": t["turn_id"], "target_top3": [truth[t["turn_id"]][
            "target_label"]]} for t in document["targets"]])

    return respond


@pytest.mark.parametrize("task", ["itp", "stp"])
def test_default_runs_send_no_request_in_which_an_answer_is_visible(release: Path, tmp_path: Path,  # noqa: F811
                                                                    task: str) -> None:
    rows = answer_rows(release, task)
    # the release does hold such leaks: the paper's per-sample batches of 5 show answers
    by_id = {r["id"]: r for r in records(release, task)}
    assert any(visible(task, [by_id[i] | {ID[task]: i} for i in group], rows)
               for group in paper_groups(records(release, task), 5))
    with ChatServer(truthful(task, gold(release, task)), api_key=KEY) as server:
        result = run_model(Project(tmp_path), release, task, "dialogue", settings(server), SCHEMA, environ=ENV)
        bodies = server.bodies()
        assert not server.errors
    assert [sorted(visible_in(task, b, rows)) for b in bodies if visible_in(task, b, rows)] == []
    sent = [i for group in sent_groups(task, bodies) for i in group]
    assert sorted(sent) == sorted(rows)  # every instance, once
    assert any(len(asked(b)["targets"]) > 1 for b in bodies)  # still batched where no answer shows
    counts, audit = result.record["counts"], result.record["request_audit"]
    assert (counts["answered"], counts["unanswered"]) == (len(rows), 0)
    assert result.record["batching"] == "leak-free" and "batching_warning" not in result.record
    assert audit == {"batching": "leak-free", "requests_audited": len(bodies), "instances_audited": len(rows),
                     "requests_showing_answers": 0, "answers_shown": 0, "requests_split": 0, "instances_refused": 0,
                     "requests_sent_showing_answers": 0, "instances_whose_answer_was_sent": 0}


@pytest.mark.parametrize("task", ["er", "vp", "rpp", "ssp"])
def test_tasks_whose_answers_no_context_shows_batch_as_before(release: Path, tmp_path: Path,  # noqa: F811
                                                              task: str) -> None:
    project, instances = Project(tmp_path), records(release, task)
    with ChatServer(lambda received: answer(asked(received.body)["sample_id"], []), api_key=KEY) as server:
        clean = run_model(project, release, task, "audiovisual", settings(server), SCHEMA, environ=ENV)
        bodies = server.bodies()
        paper = run_model(project, release, task, "audiovisual", settings(server, batching="paper"), SCHEMA,
                          environ=ENV)
        assert len(server.received) == len(bodies)  # the paper run's requests are byte-identical: all cached
    assert sent_groups(task, bodies) == paper_groups(instances, 5)
    assert paper.record["counts"]["cached"] == len(bodies) and paper.folder != clean.folder
    audit = clean.record["request_audit"]
    assert (audit["requests_audited"], audit["instances_audited"], audit["requests_showing_answers"]) == (
        len(bodies), len(instances), 0)
    assert paper.record["request_audit"]["requests_sent_showing_answers"] == 0


def test_paper_batching_reproduces_the_leaking_groups_and_is_marked(release: Path, tmp_path: Path,  # noqa: F811
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[1] / "annotation_schemas", root / "annotation_schemas")
    monkeypatch.setenv(KEY_ENV, KEY)
    rows, runner = answer_rows(release, "itp"), CliRunner()
    with ChatServer(itp_truthful(gold(release, "itp")), api_key=KEY) as server:
        base = ["--root", str(root), "run-model", "--task", "itp", "--mode", "dialogue", "--release", str(release),
                "--model", "stand-in", "--base-url", server.base_url, "--api-key-env", KEY_ENV]
        ran = runner.invoke(main, [*base, "--batching", "paper"])
        assert ran.exit_code == 0, ran.output
        bodies = server.bodies()
        clean = runner.invoke(main, base)
        assert clean.exit_code == 0, clean.output
    assert "--batching paper" in " ".join(ran.output.split())
    assert sent_groups("itp", bodies) == paper_groups(records(release, "itp"), 5)
    seen = set().union(*(visible_in("itp", b, rows) for b in bodies))
    assert seen  # answers visible, on purpose
    (paper_run,) = [p for p in (root / "build" / "runs").iterdir() if json.loads(
        (p / RUN_RECORD).read_text())["batching"] == "paper"]
    record = json.loads((paper_run / RUN_RECORD).read_text())
    assert record["request_audit"]["instances_whose_answer_was_sent"] == len({owner for _, owner in seen})
    assert record["request_audit"]["requests_sent_showing_answers"] == sum(bool(visible_in("itp", b, rows))
                                                                          for b in bodies)
    assert f"{len({owner for _, owner in seen})} instance(s) had their answer shown" in record["batching_warning"]

    outputs = {}
    for run in (root / "build" / "runs").iterdir():
        scored = runner.invoke(main, ["--root", str(root), "evaluate", "--run", str(run)])
        assert scored.exit_code == 0, scored.output
        outputs[run.name] = " ".join(scored.output.split())
    scores = json.loads((paper_run / RUN_SCORES).read_text())
    assert scores["batching"] == "paper" and scores["batching_note"] == record["batching_warning"]
    assert f"batching paper {record['batching_warning']}" in outputs.pop(paper_run.name)
    ((clean_name, clean_output),) = outputs.items()
    assert json.loads((root / "build" / "runs" / clean_name / RUN_SCORES).read_text())["batching"] == "leak-free"
    assert "batching leak-free" not in clean_output and "batching paper" not in clean_output
    board = runner.invoke(main, ["--root", str(root), "leaderboard", "--format", "markdown"])
    assert board.exit_code == 0, board.output
    assert f"| {paper_run.name} | stand-in | dialogue [paper batching] |" in board.output
    assert "| stand-in | dialogue |" in board.output  # the leak-free run, unmarked
    assert f"{paper_run.name} used --batching paper" in " ".join(board.output.split())


def test_the_audit_finds_a_hand_made_leaking_request_and_never_sends_it(release: Path) -> None:  # noqa: F811
    owner, seer, _ = leaking_pair(release)
    rows, model = answer_rows(release, "itp"), RunModelSettings(model="m")
    system = system_prompt(SCHEMA, "itp", owner["scenario"], "dialogue")

    def build(batch: Batch) -> Any:
        return batch_request("itp", "dialogue", batch, system, release, model)

    by_hand = Batch(owner["sample_id"], owner["scenario"], (owner, seer))
    payload = build(by_hand).payload("m", None)
    assert visible_in("itp", payload, rows) == {(seer["id"], owner["id"])}
    assert [(leak.seer, leak.owner) for leak in audit_payload("itp", payload)] == [(seer["id"], owner["id"])]

    gated, counts = gate("itp", "dialogue", [by_hand], build, lambda r: r.payload("m", None), "leak-free")
    assert (counts.requests_showing_answers, counts.requests_split, counts.instances_refused) == (1, 1, 0)
    assert [visible_in("itp", r.payload("m", None), rows) for r in gated.requests] == [set(), set()]
    assert sorted(i for b in gated.batches for i in b.ids) == sorted([owner["id"], seer["id"]])
    assert counts.requests_audited == 3  # the hand-made request, then its two pieces

    gated, counts = gate("itp", "dialogue", [by_hand], build, lambda r: r.payload("m", None), "paper")
    assert len(gated.requests) == 1 and counts.instances_whose_answer_was_sent == [owner["id"]]


@pytest.mark.parametrize("batching", ["leak-free", "paper"])
def test_an_instance_whose_own_prompt_shows_its_answer_is_never_sent(release: Path, tmp_path: Path,  # noqa: F811
                                                                     batching: str) -> None:
    broken = tmp_path / "v1"
    refused = self_leaking_release(release, broken)
    with ChatServer(itp_truthful(gold(release, "itp")), api_key=KEY) as server:
        result = run_model(Project(tmp_path), broken, "itp", "dialogue", settings(server, batching=batching), SCHEMA,
                           environ=ENV)
        sent = [i for b in server.bodies() for i in sent_groups("itp", [b])[0]]
    assert refused not in sent and len(sent) == len(records(broken, "itp")) - 1
    (why,) = [u["reason"] for u in lines(result.folder / RUN_UNANSWERED) if u["id"] == refused]
    assert why.startswith("leak_refused: its own prompt shows its answer")
    assert result.record["request_audit"]["instances_refused"] == 1
    assert result.record["counts"]["unanswered_by_reason"] == {"leak_refused": 1}

    audit = CliRunner().invoke(main, ["--root", str(tmp_path), "audit-leaks", str(broken)])
    assert audit.exit_code == 1 and refused in audit.output
    assert "own prompt shows their own answer: 1 (must be 0)" in " ".join(audit.output.split())


def test_the_release_audit_reports_the_itp_and_stp_leaks(release: Path, tmp_path: Path) -> None:  # noqa: F811
    result = CliRunner().invoke(main, ["--root", str(tmp_path), "audit-leaks", str(release), "--json"])
    assert result.exit_code == 0, result.output
    report = {t["task"]: t for t in json.loads(result.output)["tasks"]}
    assert sorted(report) == sorted(ID)
    for task in ("itp", "stp"):
        rows, instances = answer_rows(release, task), records(release, task)
        samples = {r["sample_id"] for r in instances}
        keyed = {s: [r | {ID[task]: r["id"]} for r in instances if r["sample_id"] == s] for s in samples}
        pairs = {pair for group in keyed.values() for pair in visible(task, group, rows) if pair[0] != pair[1]}
        by_id = {r["id"]: r | {ID[task]: r["id"]} for r in instances}
        in_batches = {owner for group in paper_groups(instances, 5)
                      for _, owner in visible(task, [by_id[i] for i in group], rows)}
        assert pairs, f"{task}: the fixture release must hold leaks, or this test proves nothing"
        assert report[task]["pairs"] == len(pairs)
        assert report[task]["exposed_if_batched_per_sample"] == len({owner for _, owner in pairs})
        assert report[task]["exposed_in_paper_batches"] == len(in_batches)
    for task in ("er", "vp", "rpp", "ssp"):
        assert (report[task]["pairs"], report[task]["exposed_in_paper_batches"]) == (0, 0)
    assert all(t["own_answer_shown"] == [] for t in report.values())
    text = CliRunner().invoke(main, ["--root", str(tmp_path), "audit-leaks", str(release)])
    assert text.exit_code == 0 and "own prompt shows their own answer: 0 (must be 0)" in " ".join(text.output.split())


def test_a_run_from_before_the_audit_is_scored_and_listed_as_unaudited(release: Path,  # noqa: F811
                                                                       tmp_path: Path) -> None:
    runs = tmp_path / "build" / "runs"
    perfect = [{"id": g["id"], "target_top3": [g["gold"]["target_label"]]} for g in records(release, "stp", "gold")]
    old = make_run(runs / "old-stp", release, "stp", perfect, [])  # a run.json without batching or request_audit
    scores = score_run(read_run(old), release, text_similarity=False)
    assert scores["batching"] == "unaudited" and "ITP/STP answers may have been visible" in scores["batching_note"]
    board = CliRunner().invoke(main, ["--root", str(tmp_path), "leaderboard", "--format", "markdown"])
    assert board.exit_code == 0, board.output
    assert "STP: old-stp made before requests were audited" in " ".join(board.output.split())
    assert "| old-stp | model-a | dialogue |" in board.output  # not marked as paper: its grouping is unknown
