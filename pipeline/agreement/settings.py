"""Settings of `rescue agree`, `rescue adjudicate` and `rescue gold` (`[tool.rescue.agreement]`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ConsensusRule = Literal["majority", "unanimous", "median", "medoid"]


class AgreementSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_file: str = Field("rescue-v1.yaml", description="annotation schema in annotation_schemas/")
    bootstrap_samples: int = Field(1000, ge=0, description="resamples of rows for the confidence intervals; 0 = none")
    confidence: float = Field(0.95, gt=0, lt=1, description="confidence level of the percentile intervals")
    seed: int = Field(20261130, description="bootstrap seed, recorded in every report for reproducibility")
    set_distance: Literal["masi", "jaccard"] = Field(
        "masi", description="distance between two sets of names or rows (Passonneau's MASI, or 1 - Jaccard)")
    text_similarity: bool = Field(True, description="compare free-text fields with the offline MiniLM model")
    annotators: tuple[str, ...] = Field((), description="expected annotators; one who labelled nothing is reported")
    adjudicators: tuple[str, ...] = Field(
        (), description="accounts whose answers settle disagreements; left out of the agreement figures")
    disagreements_per_field: int = Field(
        20, ge=0, description="disagreeing rows listed per field in the report (the rest are counted)")
    min_annotators: int = Field(2, ge=1, description="a row field with fewer answers goes to the adjudication queue")
    majority_share: float = Field(0.5, ge=0, lt=1, description="majority = strictly more than this share of answers")
    interval_max_spread: float = Field(
        2.0, ge=0, description="median wins when a majority of the answers lie at most this far from it")
    text_min_similarity: float = Field(
        0.6, ge=-1, le=1, description="medoid text wins when a majority of the answers are at least this similar "
                                      "to it (cosine, MiniLM)")
    consensus: dict[str, ConsensusRule] = Field(
        default_factory=dict,
        description="rule per measure id (e.g. 'utterance_type', 'internal_emotion.intensity'), overriding the "
                    "default of its agreement level: nominal majority, set majority per member, ordinal/interval "
                    "median, text medoid")
