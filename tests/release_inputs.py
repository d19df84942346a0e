"""Hand-made release inputs shared by the release, evaluate and freeze tests: the schema, a provenance, two gold
sessions (tests/tasks_rows.py) and the files and commands they are given through. Helpers only, no tests."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pipeline.cli import main
from pipeline.schema import load_schema
from pipeline.tasks.release import ModelVersion, ReleaseProvenance
from tests.tasks_rows import row, session, strategy

REPO = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(REPO / "annotation_schemas" / "rescue-v1.yaml")
PROVENANCE = ReleaseProvenance(code_version="0.1.0+test", annotation_snapshots=("snap-2026-11-30-a",),
                               models=(ModelVersion(role="asr", name="whisper-base", version="1.0.0"),),
                               gold_source="build/gold/benchmark.jsonl")
FAMILY = "family_therapy/006/merged"  # the sample id of family_session()


def family_session():  # type: ignore[no-untyped-def]
    T = "Therapist"
    rows = [
        row(1, "Maria", ["Nick"]), row(2, "Nick", ["Maria"]),
        row(3, T, ["Maria", "Joel"], support_strategy=strategy(["Maria", "Joel"], "boundary"),
            relation_cycle_state="cross_generational_coalition"),
        row(4, "Joel", [T], relation_cycle_state=""),
        row(5, T, ["Joel"], support_strategy=strategy(["Joel"], "repair"), relation_cycle_state="repair_softening"),
    ]
    return session(rows, "family_therapy/006/merged", "family", ["Maria", "Nick", "Joel"])


def gold_sessions():  # type: ignore[no-untyped-def]
    return [session(), family_session()]


def write_gold(path: Path, sessions) -> Path:  # type: ignore[no-untyped-def]
    path.write_text("".join(json.dumps(s.model_dump(mode="json", exclude_unset=True)) + "\n" for s in sessions))
    return path


def run(root: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["--root", str(root), *args])


def ids(release: Path, task: str) -> dict[tuple[str, int], str]:
    """(sample id, row index) -> instance id of a task's gold file in a release."""
    lines = (release / f"gold/{task}.jsonl").read_text().splitlines()
    return {(r["sample_id"], r["row_index"]): r["id"] for r in map(json.loads, lines)}


def published_benchmark(root: Path) -> Path:
    """The gold sessions written as the published benchmark_191.jsonl is: one session per line."""
    path = root / "benchmark_191.jsonl"
    path.write_text("".join(json.dumps(s.model_dump(mode="json", exclude_unset=True)) + "\n" for s in gold_sessions()))
    return path
