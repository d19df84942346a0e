"""The frozen release: byte-identical on rebuild, a manifest that `verify` checks, a card the Hugging Face
loader reads, and statistics worked out by hand on small sessions."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from pipeline.errors import RescueError
from pipeline.tasks.build import build_tasks
from pipeline.tasks.release import freeze_release
from pipeline.tasks.settings import TaskSettings
from pipeline.tasks.stats import table3, table3_csv, table3_markdown, transitions
from pipeline.tasks.verify import verify_release
from tests.conftest import tree_digest
from tests.release_inputs import PROVENANCE, SCHEMA, gold_sessions
from tests.tasks_rows import row, session

@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("first") / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    return out


def test_freezing_twice_gives_byte_identical_files(frozen: Path, tmp_path: Path) -> None:
    again = tmp_path / "v1"
    freeze_release(list(reversed(gold_sessions())), TaskSettings(), PROVENANCE, again, schema=SCHEMA)  # input order
    assert tree_digest(frozen) == tree_digest(again)
    assert sorted(tree_digest(frozen)) == sorted([
        "MANIFEST.json", "README.md", "croissant.json", "benchmark.jsonl",
        *(f"tasks/{t}.jsonl" for t in ("er", "itp", "rpp", "ssp", "stp", "vp")),
        *(f"gold/{t}.jsonl" for t in ("er", "itp", "rpp", "ssp", "stp", "vp")),
        *(f"{kind}/{t}.parquet" for kind in ("tasks", "gold")
          for t in ("er", "itp", "rpp", "ssp", "stp", "vp")),
        "benchmark.parquet", "stats/instances.csv", "stats/instances.md", "stats/statistics.json",
        "stats/table3.csv", "stats/table3.md",
        "figures/relation_transitions_couple.png", "figures/relation_transitions_family.png",
        *(f"figures/labels_{t}.png" for t in ("er", "itp", "rpp", "ssp", "stp", "vp"))])


def test_pngs_are_real_images_without_software_or_time_chunks(frozen: Path) -> None:
    data = (frozen / "figures/relation_transitions_couple.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 300 and height > 300
    assert b"tIME" not in data and b"Software" not in data


def test_manifest_lists_every_file_with_hash_rows_and_provenance(frozen: Path) -> None:
    manifest = json.loads((frozen / "MANIFEST.json").read_text())
    on_disk = {p.relative_to(frozen).as_posix() for p in frozen.rglob("*") if p.is_file()} - {"MANIFEST.json"}
    assert {e["path"] for e in manifest["files"]} == on_disk
    for entry in manifest["files"]:
        data = (frozen / entry["path"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
    rows = {e["path"]: e["rows"] for e in manifest["files"]}
    # ITP: 8 couple instances + family: yes after rows 2, 4 and no after row 1 -> n = 1: the middle yes (row 4), row 1
    assert rows["tasks/itp.jsonl"] == rows["gold/itp.jsonl"] == 10 and rows["benchmark.jsonl"] == 2
    assert rows["stats/table3.csv"] == 7 and rows["README.md"] is None
    assert manifest["release"] == "v1" and manifest["schema"]["id"] == "rescue-v1"
    assert manifest["task_settings"] == TaskSettings().as_json()
    assert manifest["code_version"] == "0.1.0+test"
    assert manifest["provenance"]["annotation_snapshots"] == ["snap-2026-11-30-a"]
    assert manifest["provenance"]["models"] == [{"role": "asr", "name": "whisper-base", "version": "1.0.0"}]
    assert manifest["gold"]["warnings"] == 3 and manifest["tools"]["matplotlib"]
    assert manifest["instances"]["rpp"] == {"couple": 3, "couple_samples": 1, "family": 2, "family_samples": 1,
                                            "all": 5}
    text = (frozen / "MANIFEST.json").read_text()
    assert not re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", text)  # no build time anywhere


def test_benchmark_jsonl_round_trips_the_gold_sessions(frozen: Path) -> None:
    from pipeline.benchmark_format import BenchmarkSession

    lines = (frozen / "benchmark.jsonl").read_text().splitlines()
    assert [BenchmarkSession.model_validate_json(line) for line in lines] == sorted(gold_sessions(),
                                                                                   key=lambda s: s.sample_id)


def test_refreezing_is_a_no_op_and_never_silently_replaces_a_release(frozen: Path, tmp_path: Path) -> None:
    copy = tmp_path / "v1"
    shutil.copytree(frozen, copy)
    summary = freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, copy, schema=SCHEMA)
    assert summary.unchanged and tree_digest(copy) == tree_digest(frozen)
    other = TaskSettings(itp={"context_size": 1})
    with pytest.raises(RescueError, match="already exists with different content") as error:
        freeze_release(gold_sessions(), other, PROVENANCE, copy, schema=SCHEMA)
    assert "--force" in error.value.fix and tree_digest(copy) == tree_digest(frozen)
    assert [p.name for p in tmp_path.iterdir()] == ["v1"]          # the refused copy left no temp folder
    replaced = freeze_release(gold_sessions(), other, PROVENANCE, copy, schema=SCHEMA, overwrite=True)
    assert not replaced.unchanged and tree_digest(copy) != tree_digest(frozen) and verify_release(copy).ok


def test_verify_reports_changed_missing_and_extra_files(frozen: Path, tmp_path: Path) -> None:
    copy = tmp_path / "v1"
    shutil.copytree(frozen, copy)
    assert verify_release(copy).ok and verify_release(copy).checked == 41  # 40 files + croissant.json
    with (copy / "gold/itp.jsonl").open("a") as handle:
        handle.write('{"id": "forged"}\n')
    (copy / "figures/labels_er.png").unlink()
    (copy / "tasks/notes.txt").write_text("x")
    report = verify_release(copy)
    assert not report.ok
    assert [c.path for c in report.changed] == ["gold/itp.jsonl"]
    assert "11 rows (manifest 10)" in report.changed[0].problem
    assert report.missing == ("figures/labels_er.png",) and report.extra == ("tasks/notes.txt",)
    with pytest.raises(RescueError, match="not found"):
        verify_release(tmp_path)


def test_table3_worked_by_hand() -> None:
    build = build_tasks(gold_sessions(), TaskSettings(), SCHEMA)
    table = table3(build.views)
    # couple: 16 rows, last row ends at 16 * 5 + 4.5 = 84.5 s; speakers Alan, Evelyn, Therapist; 6 therapist rows
    assert table["couple"] == {"samples": 1, "total_minutes": 1.4, "total_rows": 16, "avg_minutes": 1.41,
                               "avg_rows": 16.0, "avg_speakers": 3.0, "therapist_share": 0.375}
    # family: 5 rows ending at 29.5 s; speakers Maria, Nick, Therapist, Joel; 2 therapist rows
    assert table["family"] == {"samples": 1, "total_minutes": 0.5, "total_rows": 5, "avg_minutes": 0.49,
                               "avg_rows": 5.0, "avg_speakers": 4.0, "therapist_share": 0.4}
    assert table["all"] == {"samples": 2, "total_minutes": 1.9, "total_rows": 21, "avg_minutes": 0.95,
                            "avg_rows": 10.5, "avg_speakers": 3.5, "therapist_share": 0.381}
    markdown = table3_markdown(table)
    assert "| Therapist turn share | 37.5% | 40.0% | 38.1% |" in markdown
    assert "| Avg speakers / sample | 3.00 | 4.00 | 3.50 |" in markdown


def test_table3_without_family_sessions_says_n_a_not_zero(tmp_path: Path) -> None:
    table = table3(build_tasks([session()], TaskSettings(), SCHEMA).views)
    assert table["family"] == {"samples": 0, "total_minutes": 0.0, "total_rows": 0, "avg_minutes": None,
                               "avg_rows": None, "avg_speakers": None, "therapist_share": None}
    markdown = table3_markdown(table)
    assert "| Avg duration / sample (min) | 1.41 | n/a | 1.41 |" in markdown
    assert "| Therapist turn share | 37.5% | n/a | 37.5% |" in markdown and "0.00" not in markdown
    assert "therapist_share,0.375,,0.375" in table3_csv(table).splitlines()     # empty = missing in CSV
    out = tmp_path / "v1"
    freeze_release([session()], TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    stats = json.loads((out / "stats/statistics.json").read_text())
    assert stats["table3"]["family"]["avg_speakers"] is None and stats["table3"]["family"]["therapist_share"] is None
    assert "| Therapist turn share | 37.5% | n/a | 37.5% |" in (out / "README.md").read_text()
    assert (out / "stats/table3.md").read_text() == markdown


def test_parquet_keeps_every_value_or_stores_the_column_as_json_text() -> None:
    """The checks behind each Parquet file, on the value kinds that trip a typed column."""
    import polars as pl

    from pipeline.tasks.parquet_files import parquet_bytes, same_json

    assert same_json({"a": 3, "b": None}, {"a": 3.0}) and same_json([{"x": 1}], [{"x": 1, "y": None}])
    assert not same_json(True, 1) and not same_json("6", 6) and not same_json([1, 2], [2, 1])
    records = [
        {"id": "a", "score": 3, "flag": True, "views": [{"target": "B", "viewpoint": "v"}], "mixed": 7},
        {"id": "b", "score": 2.5, "views": [{"target": "C", "source": "A", "viewpoint": "w"}], "mixed": "7"},
        {"id": "c", "score": None, "flag": False, "views": [], "mixed": None, "only_here": {"k": [1, 2]}},
    ]
    data, as_json = parquet_bytes(records, "test.parquet")
    assert as_json == ["mixed"]  # a number in one record, text in another: one type would change a value
    read = pl.read_parquet(data).to_dicts()
    for record, back in zip(records, read, strict=True):
        back["mixed"] = None if back["mixed"] is None else json.loads(back["mixed"])
        assert same_json(record, back), back
    assert read[1]["score"] == 2.5 and read[0]["flag"] is True and read[1]["flag"] is None


def test_parquet_files_hold_the_jsonl_records_exactly(frozen: Path) -> None:
    import polars as pl
    import pyarrow.parquet as pq

    manifest = {e["path"]: e for e in json.loads((frozen / "MANIFEST.json").read_text())["files"]}
    for kind in ("tasks", "gold"):
        for task in ("er", "vp", "rpp", "itp", "stp", "ssp"):
            records = [json.loads(line) for line in (frozen / f"{kind}/{task}.jsonl").read_text().splitlines()]
            parquet = frozen / f"{kind}/{task}.parquet"
            assert pl.read_parquet(parquet).to_dicts() == records, parquet      # lists of dicts included
            assert pq.read_table(parquet).to_pylist() == records, parquet       # a second, independent reader
            assert manifest[f"{kind}/{task}.parquet"]["rows"] == len(records)
    # the row format's `intensity` is a number in one row and text ("7") in another: `rows` cannot be one
    # Parquet type without changing a value, so it is stored as JSON text, and the manifest and card say so
    manifest_json = json.loads((frozen / "MANIFEST.json").read_text())
    assert manifest_json["parquet_json_columns"] == {"benchmark.parquet": ["rows"]}
    assert "`benchmark.parquet`: `rows`" in (frozen / "README.md").read_text()
    sessions = [json.loads(line) for line in (frozen / "benchmark.jsonl").read_text().splitlines()]
    read = pl.read_parquet(frozen / "benchmark.parquet").to_dicts()
    assert [{**r, "rows": json.loads(r["rows"])} for r in read] == sessions
    vp_gold = pl.read_parquet(frozen / "gold/vp.parquet")
    assert isinstance(vp_gold.schema["gold"], pl.Struct)                         # nested, not JSON text


def test_card_has_citation_and_licence_sections(frozen: Path, tmp_path: Path) -> None:
    card = (frozen / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["license"] == "other"
    assert "## Citation" in card and "## Licence" in card
    # no citation set (an internal release): the card says so and names the paper, with no placeholder entry
    assert "arXiv 2609.09657" in card and "No citation was set" in card and "placeholder" not in card.lower()
    assert "source videos" in card
    out = tmp_path / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA, license="cc-by-nc-4.0")
    assert yaml.safe_load((out / "README.md").read_text().split("---\n")[1])["license"] == "cc-by-nc-4.0"
    assert json.loads((out / "MANIFEST.json").read_text())["license"] == "cc-by-nc-4.0"


def test_transition_matrix_is_row_normalised_without_self_transitions() -> None:
    T = "Therapist"
    labels = ["attack_attack", "pursue_withdraw", "attack_attack", "repair_softening", "repair_softening",
              "attack_attack"]
    rows = []
    for n, label in enumerate(labels):
        rows += [row(2 * n + 1, "Ann", [T]), row(2 * n + 2, T, ["Ann"], relation_cycle_state=label)]
    build = build_tasks([session(rows, "ann_and_ben/001_x", participants=["Ann", "Ben"])], TaskSettings(), SCHEMA)
    couple = transitions(build)["couple"]
    order = couple["labels"]
    cell = {(a, b): couple["row_normalised"][i][j] for i, a in enumerate(order) for j, b in enumerate(order)}
    count = {(a, b): couple["counts"][i][j] for i, a in enumerate(order) for j, b in enumerate(order)}
    # a->p, p->a, a->r, r->r (self, left out), r->a
    assert count[("attack_attack", "pursue_withdraw")] == 1 == count[("attack_attack", "repair_softening")]
    assert count[("repair_softening", "repair_softening")] == 0
    assert (cell[("attack_attack", "pursue_withdraw")], cell[("attack_attack", "repair_softening")]) == (0.5, 0.5)
    assert cell[("pursue_withdraw", "attack_attack")] == 1.0 == cell[("repair_softening", "attack_attack")]
    assert sum(couple["row_normalised"][order.index("mixed_transition")]) == 0.0
    assert order == list(SCHEMA.labels("relation_pattern", "couple"))


def test_dataset_card_configs_load_with_the_hugging_face_loader(frozen: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets  # the real Hugging Face loader (a test dependency in pyproject [test])
    card = (frozen / "README.md").read_text()
    assert card.startswith("---\n") and "configs:" in card
    manifest = {e["path"]: e["rows"] for e in json.loads((frozen / "MANIFEST.json").read_text())["files"]}
    front = yaml.safe_load(card.split("---\n")[1])
    paths = {c["config_name"]: c["data_files"][0]["path"] for c in front["configs"]}
    assert paths["itp"] == "tasks/itp.parquet" and paths["vp_gold"] == "gold/vp.parquet"
    for config, path in [("itp", "tasks/itp.jsonl"), ("er", "tasks/er.jsonl"), ("rpp_gold", "gold/rpp.jsonl"),
                         ("benchmark", "benchmark.jsonl")]:
        loaded = datasets.load_dataset(str(frozen), config, split="test")
        assert len(loaded) == manifest[path], config
    for task in ("er", "vp", "rpp", "itp", "stp", "ssp"):    # nested fields load as the JSONL holds them
        for config, path in [(task, f"tasks/{task}.jsonl"), (f"{task}_gold", f"gold/{task}.jsonl")]:
            loaded = datasets.load_dataset(str(frozen), config, split="test").to_list()
            assert loaded == [json.loads(line) for line in (frozen / path).read_text().splitlines()], config
    itp = datasets.load_dataset(str(frozen), "itp", split="test")
    assert "gold" not in itp.column_names and "decision_after_row" in itp.column_names
    assert set(datasets.get_dataset_config_names(str(frozen))) == {
        *("er", "vp", "rpp", "itp", "stp", "ssp"), *(f"{t}_gold" for t in ("er", "vp", "rpp", "itp", "stp", "ssp")),
        "benchmark"}


def test_bad_release_names_and_empty_gold_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RescueError, match="not a usable version"):
        freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, tmp_path / "v 1", schema=SCHEMA)
    with pytest.raises(RescueError, match="no gold sessions"):
        freeze_release([], TaskSettings(), PROVENANCE, tmp_path / "v1", schema=SCHEMA)
    broken = session()
    broken = broken.model_copy(update={"rows": broken.rows[:3] + broken.rows[4:]})   # row 4 missing
    expected = r"gold sessions: 1 problem\(s\): alan_and_evelyn/\S+ row 4 row_index: is 5, expected 4"
    with pytest.raises(RescueError, match=expected):
        freeze_release([broken], TaskSettings(), PROVENANCE, tmp_path / "v1", schema=SCHEMA)
    assert not (tmp_path / "v1").exists()


def test_freezing_in_separate_processes_with_other_hash_seeds_gives_the_same_bytes(frozen: Path,
                                                                                    tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    script = ("import sys; from pathlib import Path; from tests.release_inputs import PROVENANCE, SCHEMA, gold_sessions; "
              "from pipeline.tasks.release import freeze_release; from pipeline.tasks.settings import TaskSettings; "
              "freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, Path(sys.argv[1]), schema=SCHEMA)")
    for seed in ("1", "4242"):
        out = tmp_path / seed / "v1"
        subprocess.run([sys.executable, "-c", script, str(out)], cwd=root, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        assert tree_digest(out) == tree_digest(frozen), f"PYTHONHASHSEED={seed}"
