"""A corpus step keeps what its next run needs as its own typed, frozen detail (issue 21), stored under the same
JSON keys as before, read back without dict lookups; a record of an earlier build still reads."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pipeline.corpus.release_step import FreezeDetail
from pipeline.annotate.server_step import ServerDetail
from pipeline.annotate.pull_step import PullDetail
from pipeline.annotate.push_step import PushDetail
from pipeline.annotate.sample_steps import ApplyDetail
from pipeline.store import StepRun


def test_a_recorded_detail_reads_back_typed_and_an_earlier_key_is_ignored() -> None:
    run = StepRun.model_validate_json(json.dumps({
        "step": "pull", "status": "done", "fingerprint": "f",
        "detail": {"snapshot": "20261130T100000Z", "digests": {"20261130T100000Z": "d1"}, "reanchored": 2,
                   "unplaced": 1, "reanchored_detail": ["task 7 (ann1): row a -> row b"], "a_key_no_longer_kept": 3}}))
    detail = PullDetail.of(run)
    assert detail is not None
    assert (detail.snapshot, detail.digests, detail.reanchored, detail.unplaced) == (
        "20261130T100000Z", {"20261130T100000Z": "d1"}, 2, 1)
    assert detail.reanchored_detail == ("task 7 (ann1): row a -> row b",) and detail.same_parse == ""
    with pytest.raises(ValidationError):  # frozen: what a step read is not changed behind its back
        detail.snapshot = "other"  # type: ignore[misc]


def test_a_damaged_detail_reads_as_none_and_no_run_as_none() -> None:
    damaged = StepRun(step="pull", status="done", detail={"reanchored": "many"})
    assert PullDetail.of(damaged) is None and PullDetail.of(None) is None


def test_the_details_keep_the_json_keys_earlier_builds_wrote() -> None:
    assert set(FreezeDetail().model_dump()) == {"release", "sessions", "manifest_sha256"}
    assert set(PushDetail().model_dump()) == {"projects", "annotators", "imported"}
    assert set(ServerDetail().model_dump()) == {"stamp", "url", "stopped"}
    recorded = {"projects": {"RESCUE couple": [3, 12]}, "annotators": ["a@x"], "imported": 12}
    push = PushDetail.of(StepRun(step="push", status="done", detail=recorded))
    assert push is not None and push.projects == {"RESCUE couple": (3, 12)} and push.annotators == ("a@x",)
    stamp = ServerDetail.of(StepRun(step="server", status="done", detail={"stamp": [["db.sqlite3", 10, 99]]}))
    assert stamp is not None and stamp.stamp == [("db.sqlite3", 10, 99)]
    interrupted = ApplyDetail.of(StepRun(step="sample-annotations", status="failed", detail={"unfinished": ["s1"]}))
    assert interrupted is not None and interrupted.unfinished == ("s1",) and interrupted.applied is None
