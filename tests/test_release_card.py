"""A release a stranger can use (issue 22, part 7): the card's prediction format, annotation process and
agreement, sensitive data and limitations, a citation from settings (never a placeholder; a public release
without one, or with the unspecific licence `other`, is refused before anything is written), and
croissant.json validated and read by the real `mlcroissant` package.

Agreement figures come from a typed agreement report written where `rescue agree` writes it; the whole chain
with a real Label Studio is tests/test_corpus_build.py."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.agreement.results import AgreementReport, Figure
from pipeline.cli import main
from pipeline.corpus.agreement_card import summarise
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.tasks.release import freeze_release
from pipeline.tasks.release_card import CardSettings
from pipeline.tasks.settings import TaskSettings
from tests.conftest import tree_digest
from tests.freeze_project import freeze, hand_made_gold_project
from tests.release_inputs import PROVENANCE, SCHEMA, gold_sessions


@pytest.fixture
def corpus(project: Project) -> Project:
    """The freeze step's small project (tests/freeze_project.py)."""
    return hand_made_gold_project(project)

CITATION = "@article{rescue2026, title = {RESCUE-BENCH}, author = {Doe, Jane}, year = {2026}}"


def agreement_report(alpha: float = 0.81) -> AgreementReport:
    def figure(measure: str, level: str, metric: str, value: float, **more: float) -> Figure:
        return Figure(scope="field", measure=measure, level=level, metric=metric, value=value, units=12, **more)

    return AgreementReport(
        snapshot="20261201T090000Z", annotations_file="build/annotations/20261201T090000Z/annotations.jsonl",
        schema_id="rescue-v1", annotators=("ann@example.org", "ben@example.org", "cem@example.org"), sessions=2,
        rows=45, answers=135, bootstrap_samples=1000, confidence=0.95, seed=0, set_distance="masi",
        figures=(figure("utterance_type", "nominal", "alpha", alpha, low=0.7, high=0.9),
                 figure("utterance_type", "nominal", "percent_agreement", 0.875),
                 figure("utterance_type", "nominal", "fleiss_kappa", 0.8),
                 figure("dialogue_cleaned", "text", "similarity", 0.92),
                 Figure(scope="session", measure="utterance_type", level="nominal", metric="alpha", value=0.1,
                        units=3, session="x")))


@pytest.fixture(scope="module")
def public(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("public") / "v1"
    card = CardSettings(citation=CITATION, public=True, agreement=summarise(agreement_report()))
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA, license="cc-by-nc-4.0", card=card)
    return out


def test_card_has_the_sections_a_stranger_needs(public: Path) -> None:
    card = (public / "README.md").read_text()
    for heading in ("## Prediction format", "## Annotation process and agreement",
                    "## Sensitive data, consent and limitations", "## Citation", "## Licence"):
        assert heading in card, heading
    for field in ("predicted_internal_emotion", "predicted_viewpoints", "relation_top3", "should_speak",
                  "target_top3", "strategy_top3"):
        assert field in card, field
    assert '`{"id": "itp-...", "should_speak": "yes"}`' in card
    # the agreement report's field figures, and only field-level ones
    assert "snapshot named in MANIFEST.json" in card and "3\nannotator(s)" in card
    assert "20261201T090000Z" not in card  # a new pull's name alone changes neither the card nor the release
    assert "| `utterance_type` | nominal | 12 | 0.810 [0.700, 0.900] | 87.5 % |" in card
    assert "| `dialogue_cleaned` | text | 12 | n/a | similarity 0.920 |" in card
    assert "consent" in card.lower() and "therapy" in card.lower()
    assert CITATION in card and "placeholder" not in card.lower()


def test_croissant_is_valid_and_mlcroissant_reads_every_record_set(public: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    import mlcroissant as mlc

    with caplog.at_level(logging.WARNING):
        dataset = mlc.Dataset(jsonld=str(public / "croissant.json"))     # raises on any validation error
    issues = dataset.metadata.ctx.issues
    assert not issues.errors
    # the one warning left: no datePublished, on purpose (a date would make a rebuild differ)
    assert all("datePublished" in warning for warning in issues.warnings), issues.warnings
    assert "context` is not standard" not in caplog.text
    metadata = dataset.metadata
    assert metadata.license == ["cc-by-nc-4.0"] and metadata.cite_as == CITATION and metadata.version == "1.0.0"
    analysis = metadata.data_annotation_analysis
    analysis = analysis if isinstance(analysis, str) else " ".join(analysis)
    assert "Krippendorff" in analysis and "utterance_type: alpha 0.810" in analysis
    for rai in ("data_collection", "data_annotation_protocol", "personal_sensitive_information", "data_limitations",
                "data_biases", "data_use_cases", "data_social_impact"):
        assert getattr(metadata, rai), rai
    manifest = {e["path"]: e for e in json.loads((public / "MANIFEST.json").read_text())["files"]}
    assert "croissant.json" in manifest
    document = json.loads((public / "croissant.json").read_text())
    for item in document["distribution"]:
        assert item["sha256"] == manifest[item["contentUrl"]]["sha256"]
    for name, path in [("itp", "tasks/itp.jsonl"), ("rpp_gold", "gold/rpp.jsonl"), ("benchmark", "benchmark.jsonl")]:
        records = list(dataset.records(name))
        want = [json.loads(line) for line in (public / path).read_text().splitlines()]
        assert len(records) == manifest[path]["rows"]
        key = "sample_id" if name == "benchmark" else "id"
        assert [r[f"{name}/{key}"].decode() for r in records] == [w[key] for w in want]


def test_public_release_without_citation_or_with_licence_other_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "v1"
    with pytest.raises(RescueError, match="release_citation is not set") as error:
        freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA, license="cc-by-4.0",
                       card=CardSettings(public=True))
    assert "[tool.rescue.build]" in error.value.fix
    with pytest.raises(RescueError, match="release_license is not set"):
        freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA,
                       card=CardSettings(public=True, citation=CITATION))
    assert not tmp_path.joinpath("v1").exists() and list(tmp_path.iterdir()) == []


def test_freeze_gold_reads_citation_and_public_from_settings_and_has_no_agreement(
        corpus: Project) -> None:  # noqa: F811
    gold = corpus.build / "gold" / "benchmark.jsonl"
    settings = corpus.root / "pyproject.toml"
    base = settings.read_text()
    settings.write_text(base + "release_public = true\n")
    args = ["--root", str(corpus.root), "freeze", "--gold", str(gold), "--version", "v2"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1 and "release_citation and release_license are not set" in refused.output
    assert "Traceback" not in refused.output and not (corpus.build / "release" / "v2").exists()
    settings.write_text(f"{base}release_public = true\nrelease_license = \"cc-by-4.0\"\n"
                        f"release_citation = '{CITATION}'\n")
    made = CliRunner().invoke(main, args)
    assert made.exit_code == 0, made.output
    card = (corpus.build / "release" / "v2" / "README.md").read_text()
    assert CITATION in card and "**Agreement figures: not available.**" in card


def test_build_freeze_puts_the_agreement_report_on_the_card_and_rebuilds_when_it_changes(
        corpus: Project) -> None:  # noqa: F811
    folder = corpus.build / "agreement"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(agreement_report().model_dump_json(indent=1) + "\n")
    release, said = freeze(corpus)
    assert release is not None and said.startswith("ran")
    assert "0.810 [0.700, 0.900]" in (release / "README.md").read_text()
    first = tree_digest(release)
    assert freeze(corpus)[1].startswith("up to date") and tree_digest(release) == first   # byte-stable
    (folder / "report.json").write_text(agreement_report(alpha=0.5).model_dump_json(indent=1) + "\n")
    assert freeze(corpus)[1].startswith("ran")
    assert "0.500 [0.700, 0.900]" in (release / "README.md").read_text()
    (folder / "report.json").write_text("{not json")
    with pytest.raises(RescueError, match="build/agreement/report.json is not a readable agreement report"):
        freeze(corpus)
