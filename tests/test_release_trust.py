"""Nothing shrinks or sticks silently (issue 9, section 4; issue 19, part 3): `--force` keeps the old release,
a smaller release is refused unless `--allow-shrink`, `verify` covers the manifest's own fields, a sample
whose relation labels sit in `relation_pattern` still gets RPP instances (and says which field supplied
them), a sample without instances of a task is reported, and an empty gold file is a clear "nothing to
freeze yet", not "fix the named rows"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.errors import RescueError
from pipeline.tasks.build import build_tasks
from pipeline.tasks.gold_input import read_gold_file
from pipeline.tasks.release import freeze_release
from pipeline.tasks.settings import TaskSettings
from pipeline.tasks.shrink import ReleaseWouldShrink
from pipeline.tasks.verify import verify_release
from tests.conftest import tree_digest
from tests.tasks_rows import SAMPLE_ID, row, session, strategy
from tests.release_inputs import PROVENANCE, SCHEMA, family_session, gold_sessions, run, write_gold

PATTERN_ONLY = "family_therapy/004/merged"


def pattern_only_session():  # type: ignore[no-untyped-def]
    """A family sample as `family_therapy/004` is released: no `relation_cycle_state` on any row, the
    relation label only in `relation_pattern` (with its reason and evidence) on therapist rows."""
    T = "Therapist"
    rows = [
        row(1, "Ana", ["Tom"], relation_pattern="escalation_conflict"),   # a client row: not an RPP row
        row(2, T, ["Ana", "Tom"], support_strategy=strategy(["Ana", "Tom"], "boundary"),
            relation_pattern="escalation_conflict", relation_pattern_reason="both raise their voices",
            relation_pattern_evidence_rows=[1]),
        row(3, "Tom", [T]),
        row(4, T, ["Tom"], relation_pattern=""),                                  # no clear pattern
        row(5, "Ana", [T]),
        row(6, T, ["Ana"], support_strategy=strategy(["Ana"], "repair"), relation_pattern="repair_softening"),
    ]
    return session(rows, PATTERN_ONLY, "family", ["Ana", "Tom", "Lia"])


# -- --force never deletes a release ------------------------------------------------------------------------
def test_force_moves_the_old_release_to_superseded(tmp_path: Path) -> None:
    out = tmp_path / "release" / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    before = tree_digest(out)
    replaced = freeze_release(gold_sessions()[:1], TaskSettings(), PROVENANCE, out, schema=SCHEMA, overwrite=True,
                              allow_shrink=True)
    (kept,) = (tmp_path / "release" / "superseded").iterdir()
    assert kept.name.startswith("v1-") and replaced.superseded == str(kept)
    assert tree_digest(kept) == before and verify_release(kept).ok       # the old release, byte for byte
    assert verify_release(out).ok and json.loads((out / "MANIFEST.json").read_text())["gold"]["sessions"] == 1
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == ["superseded", "v1"]   # no temp folder left


def test_cli_force_says_where_the_previous_release_went(tmp_path: Path) -> None:
    two = write_gold(tmp_path / "two.jsonl", gold_sessions())
    one = write_gold(tmp_path / "one.jsonl", gold_sessions()[:1])
    assert run(tmp_path, "freeze", "--gold", str(two)).exit_code == 0
    forced = run(tmp_path, "freeze", "--gold", str(one), "--force", "--allow-shrink")
    assert forced.exit_code == 0, forced.output
    (kept,) = (tmp_path / "build/release/superseded").iterdir()
    assert f"the previous v1 was kept as build/release/superseded/{kept.name}/" in forced.output
    assert json.loads((kept / "MANIFEST.json").read_text())["gold"]["sessions"] == 2


# -- a release never shrinks unless asked (issue 19, part 3) -------------------------------------------------
def test_cli_freeze_refuses_a_smaller_release_and_says_what_would_be_lost(tmp_path: Path) -> None:
    two = write_gold(tmp_path / "two.jsonl", gold_sessions())
    one = write_gold(tmp_path / "one.jsonl", gold_sessions()[:1])
    assert run(tmp_path, "freeze", "--gold", str(two)).exit_code == 0
    release = tmp_path / "build/release/v1"
    before = tree_digest(release)
    lost = sorted({s.sample_id for s in gold_sessions()} - {s.sample_id for s in gold_sessions()[:1]})
    refused = run(tmp_path, "freeze", "--gold", str(one), "--force")
    assert refused.exit_code == 1 and "Traceback" not in refused.output, refused.output
    said = " ".join(refused.output.split())
    assert f"release v1 not replaced: the new one would hold less (session(s) {', '.join(lost)} would leave " \
           "the release; instances RPP 5 -> 3 (-2)" in said, said
    assert "--allow-shrink" in said and "the existing release is left as it is" in said
    assert tree_digest(release) == before and not (tmp_path / "build/release/superseded").exists()
    allowed = run(tmp_path, "freeze", "--gold", str(one), "--force", "--allow-shrink")
    assert allowed.exit_code == 0, allowed.output
    assert f"--allow-shrink: session(s) {', '.join(lost)} would leave the release" in " ".join(allowed.output.split())
    (kept,) = (tmp_path / "build/release/superseded").iterdir()
    assert tree_digest(kept) == before and json.loads((release / "MANIFEST.json").read_text())["gold"]["sessions"] == 1


def test_a_release_with_fewer_instances_of_one_task_is_a_shrink_too(tmp_path: Path) -> None:
    out = tmp_path / "release" / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    before = tree_digest(out)
    couple, family = gold_sessions()
    fewer = family.model_copy(update={"rows": family.rows[:-1]})      # same sessions, one row less
    with pytest.raises(ReleaseWouldShrink) as refused:
        freeze_release([couple, fewer], TaskSettings(), PROVENANCE, out, schema=SCHEMA, overwrite=True)
    assert not refused.value.shrink.lost_sessions and refused.value.shrink.fewer_instances
    assert tree_digest(out) == before


# -- verify covers MANIFEST.json's own fields ---------------------------------------------------------------
@pytest.mark.parametrize("edit", ["instances", "gold", "provenance", "release", "settings"])
def test_verify_reports_an_edited_manifest_field(tmp_path: Path, edit: str) -> None:
    out = tmp_path / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    manifest = json.loads((out / "MANIFEST.json").read_text())
    if edit == "instances":
        manifest["instances"]["rpp"]["all"] = 50
    elif edit == "gold":
        manifest["gold"]["sessions"] = 3
    elif edit == "provenance":
        manifest["provenance"]["annotation_snapshots"] = ["a-snapshot-never-pulled"]
    elif edit == "release":
        manifest["release"] = "v2"
    else:
        manifest["task_settings"]["itp"]["context_size"] = 9
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    report = verify_release(out)
    assert not report.ok and [c.path for c in report.changed] == ["MANIFEST.json"]
    assert "edited" in report.changed[0].problem
    if edit == "instances":
        assert "instances.rpp.all is 50 but tasks/rpp.jsonl holds 5 rows" in report.changed[0].problem
    if edit == "gold":
        assert "gold.sessions is 3 but benchmark.jsonl holds 2 rows" in report.changed[0].problem
    shown = run(tmp_path, "verify", str(out))
    assert shown.exit_code == 1 and "changed MANIFEST.json" in shown.output and "NOT intact" in shown.output


def test_verify_reports_a_manifest_without_its_content_hash(tmp_path: Path) -> None:
    out = tmp_path / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    manifest = json.loads((out / "MANIFEST.json").read_text())
    del manifest["manifest_sha256"]
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    report = verify_release(out)
    assert not report.ok and "no manifest_sha256" in report.changed[0].problem


# -- RPP: the relation label where the sample keeps it --------------------------------------------------------
def test_rpp_reads_relation_pattern_where_a_sample_has_no_relation_cycle_state() -> None:
    result = build_tasks([session(), pattern_only_session()], TaskSettings(), SCHEMA)
    family = [i for i in result.instances["rpp"] if i.sample_id == PATTERN_ONLY]
    assert [(i.row_index, i.gold["relation_label"]) for i in family] == [(2, "escalation_conflict"),
                                                                         (6, "repair_softening")]
    assert family[0].meta["reason"] == "both raise their voices" and family[0].meta["evidence_rows"] == [1]
    couple = [i.row_index for i in result.instances["rpp"] if i.sample_id == SAMPLE_ID]
    assert couple == [3, 5, 12]        # unchanged: row 2's relation_pattern is on a client row, not an RPP row
    assert result.label_sources == {SAMPLE_ID: {"relation_cycle_state": 3}, PATTERN_ONLY: {"relation_pattern": 2}}


def test_rpp_label_fields_setting_and_the_no_instance_warning() -> None:
    only_state = TaskSettings(rpp={"label_fields": ["relation_cycle_state"]})
    result = build_tasks([session(), pattern_only_session()], only_state, SCHEMA)
    assert [i.sample_id for i in result.instances["rpp"]] == [SAMPLE_ID] * 3
    assert result.label_sources[PATTERN_ONLY] == {}
    assert result.dropped["rpp"]["the sample sets none of the relation label fields (relation_cycle_state)"] == 3
    assert PATTERN_ONLY in result.without_instances["rpp"]
    with pytest.raises(ValueError, match="label_fields"):
        TaskSettings(rpp={"label_fields": []})
    with pytest.raises(ValueError, match="label_fields"):
        TaskSettings(rpp={"label_fields": ["relation_cycle_state", "relation_cycle_state"]})


def test_freeze_records_label_sources_and_warns_per_sample_and_task(tmp_path: Path) -> None:
    gold = write_gold(tmp_path / "gold.jsonl", [session(), family_session(), pattern_only_session()])
    result = run(tmp_path, "freeze", "--gold", str(gold))
    assert result.exit_code == 0, result.output
    assert (f"rpp labels per row: relation_cycle_state 5 in 2 sample(s), relation_pattern 2 in 1 sample(s) "
            f"({PATTERN_ONLY}: 2)") in result.output
    assert f"warning {PATTERN_ONLY}: no ER instance" in result.output     # no row carries an emotion
    manifest = json.loads((tmp_path / "build/release/v1/MANIFEST.json").read_text())
    assert manifest["coverage"]["rpp_label_rows"] == {
        "family_therapy/004/merged": {"relation_pattern": 2}, "family_therapy/006/merged": {"relation_cycle_state": 2},
        SAMPLE_ID: {"relation_cycle_state": 3}}
    assert PATTERN_ONLY in manifest["coverage"]["samples_without_instances"]["er"]
    assert manifest["instances"]["rpp"]["family_samples"] == 2


# -- an empty gold file means "nothing to freeze yet" ---------------------------------------------------------
def test_an_empty_gold_file_says_no_session_has_gold_yet(tmp_path: Path) -> None:
    empty = tmp_path / "benchmark.jsonl"
    empty.write_text("")
    with pytest.raises(RescueError, match="holds no sessions") as caught:
        read_gold_file(empty, SCHEMA)
    assert "fix the named rows" not in caught.value.fix and "rescue gold" in caught.value.fix
    result = run(tmp_path, "freeze", "--gold", str(empty))
    assert result.exit_code == 1 and "no session has complete gold yet" in result.output
    assert "fix the named rows" not in result.output and not (tmp_path / "build/release").exists()


def test_refused_force_leaves_nothing_behind(tmp_path: Path) -> None:
    out = tmp_path / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    shutil.copytree(out, tmp_path / "copy")
    with pytest.raises(RescueError, match="already exists"):
        freeze_release(gold_sessions()[:1], TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    assert tree_digest(out) == tree_digest(tmp_path / "copy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "v1"]
