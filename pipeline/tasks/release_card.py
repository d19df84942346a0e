"""What a release's card says beyond the data: the citation, whether the release is public, and the
annotation agreement it was made with. Set by whoever freezes (the build step from settings and its agreement
report; `rescue freeze --gold` from settings alone, with no agreement figures to give)."""

from __future__ import annotations

from pydantic import Field

from pipeline.errors import RescueError
from pipeline.records import Record

UNSPECIFIC_LICENSE = "other"  # the default: tells a stranger nothing about what they may do with the data
SETTINGS = "[tool.rescue.build]"


class FieldAgreement(Record):
    """One label field's agreement, from the agreement report (scope `field`)."""

    field: str
    level: str = Field(description="the measure's level: nominal, interval, set, text, ...")
    alpha: float | None = None
    alpha_low: float | None = None
    alpha_high: float | None = None
    percent_agreement: float | None = None
    similarity: float | None = Field(None, description="free-text fields: mean pairwise similarity")
    units: int = 0


class AgreementSummary(Record):
    """The agreement report's figures that a dataset card gives (build/agreement/report.json). The snapshot's
    name is not among them: every pull makes a new name, and the release names its snapshots in MANIFEST.json,
    so the card (and the freeze's fingerprint) change only when a figure does."""

    annotators: int
    sessions: int
    rows: int
    answers: int
    confidence: float
    bootstrap_samples: int
    fields: tuple[FieldAgreement, ...] = ()


class CardSettings(Record):
    citation: str = Field("", description="how to cite the data; empty: not set")
    public: bool = Field(False, description="a release for strangers: needs a citation and a specific licence")
    agreement: AgreementSummary | None = Field(None, description="None: no agreement report (e.g. freeze --gold)")


def check_public(card: CardSettings, license: str, version: str) -> None:
    """A public release with no citation, or with the unspecific default licence, is refused before anything
    is written: a stranger could neither cite it nor know its terms."""
    if not card.public:
        return
    missing = [name for name, unset in (("release_citation", not card.citation.strip()),
                                        ("release_license", license == UNSPECIFIC_LICENSE)) if unset]
    if missing:
        raise RescueError(
            f"release {version} is public (release_public = true) but {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set in {SETTINGS}",
            f"set release_citation (e.g. the paper's BibTeX) and release_license (the source videos' licence, "
            f"e.g. cc-by-nc-4.0) in {SETTINGS} of pyproject.toml, or release_public = false for an internal release")
