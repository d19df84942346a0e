"""Settings of the `preannotate` step (`[tool.rescue.preannotate]` in pyproject.toml).

`rescue preannotate --backend/--train-gold` reach the step (and process-pool or Ray workers) as settings
overrides of this section carried by each job (pipeline/settings.SettingsOverrides), as every command's flags do.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.preannotate.openai_settings import OpenAIDraftSettings

BACKEND_NAMES = ("transcript", "gold-model", "openai")


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GoldModelSettings(_Section):
    """The offline `gold-model` backend: MiniLM embeddings of a row and its context -> scikit-learn classifiers."""

    context_rows: int = Field(2, ge=0, le=10, description="preceding rows averaged into the context embedding")
    neighbours: int = Field(25, ge=1, description="nearest gold rows searched for text fields and list items")
    embedding_dims: int = Field(64, ge=2, le=768, description="the row + context embeddings are reduced to this "
                                "many principal components before the classifiers (fewer = faster, smoother)")
    regularization: float = Field(1.0, gt=0, description="inverse regularisation strength C of the logistic "
                                  "regression (smaller = smoother)")
    min_class_rows: int = Field(3, ge=1, description="a value seen in fewer training rows is never predicted")
    calibrate_min_rows: int = Field(60, ge=10, description="a field with at least this many training rows (and "
                                    "min_class_rows per value) gets CalibratedClassifierCV scores; fewer: the "
                                    "classifier's plain probabilities")
    calibration_folds: int = Field(3, ge=2, le=10)


class GateSettings(_Section):
    """Drafts only where they help (gate.py, margins.py): the gold-model drafts a field from its classifiers only
    where their cross-validated gain over the baseline has a confidence interval above 0; `--evaluate` calls a
    field better by the same rule."""

    folds: int = Field(5, ge=2, le=20, description="cross-validation folds, grouped by session (as many as there "
                       "are training sessions when there are fewer)")
    bootstrap_samples: int = Field(1000, ge=100, le=100_000, description="resamples of the sessions for the interval")
    confidence: float = Field(0.95, gt=0.5, lt=1.0, description="the interval's confidence level")
    min_sessions: int = Field(5, ge=2, description="a gain is significant only when measured on at least this many "
                              "sessions (a percentile interval over fewer sessions is too optimistic)")
    seed: int = Field(0, description="seed of the fold assignment and the resampling (same gold, same decision)")


class PreannotateSettings(_Section):
    backend: Literal["transcript", "gold-model", "openai"] = Field(
        "transcript", description="transcript (speaker, target guess, text), gold-model (learns from gold rows, "
        "offline) or openai (an OpenAI-compatible chat endpoint)")
    train_gold: tuple[str, ...] = Field(
        (), description="gold-model training files in the released benchmark row format, relative to the project "
        "root or absolute; empty = the project's own gold, build/gold/benchmark.jsonl")
    gold_model: GoldModelSettings = GoldModelSettings()
    gate: GateSettings = GateSettings()  # [tool.rescue.preannotate.gate]
    openai: OpenAIDraftSettings = OpenAIDraftSettings()  # [tool.rescue.preannotate.openai]: docs/llm.md
