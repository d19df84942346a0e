"""Settings of `rescue push`, `rescue pull` and the embedded Label Studio (`[tool.rescue.annotate]`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class AnnotateSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_file: str = Field("rescue-v1.yaml", description="annotation schema in annotation_schemas/")
    context_rows: int = Field(5, ge=0, le=200, description="preceding rows shown above the row being labelled")
    batch_size: int = Field(500, ge=1, le=5000, description="tasks per import request (each request is atomic)")
    media_url: str | None = Field(
        None, description="base URL under which an external server finds the project's files (paths relative to "
                          "the project root are appended); default: the embedded server serves them itself")
    server_venv: str = Field(".venv-labelstudio", description="virtual environment holding the label-studio server")
    accept_deleted: bool = Field(
        False, description="for one run only (`rescue pull --accept-deleted`): let go of the answers the server no "
                           "longer has, which pulls otherwise keep from the previous snapshot; the snapshot records it")
    start_timeout: float = Field(
        300.0, gt=0, description="seconds to wait for the embedded server's /health (the first start migrates ~70 s)")

    gateway_host: str = Field(
        "127.0.0.1", min_length=1, description="address the annotators' gateway listens on (its URL is the one to give "
                                               "annotators; 0.0.0.0 for other machines of the network)")
    gateway_port: int = Field(0, ge=0, le=65535, description="port of the annotators' gateway; 0 picks a free one at "
                                                             "the first start and keeps it while it stays free")
    public_url: str | None = Field(
        None, description="the address people open Label Studio at when it is not the gateway's own (e.g. an HTTPS "
                          "proxy in front of it); links in the agreement report use it")

    @model_validator(mode="before")
    @classmethod
    def _no_shared_overlap(cls, data: Any) -> Any:
        if isinstance(data, dict) and "annotators_per_row" in data:
            raise ValueError("annotators_per_row is no longer a setting: every annotator labels every row in a "
                             "project of their own (independent labels); remove the key, and list the annotators "
                             "with `rescue annotators add` or [tool.rescue.agreement] annotators")
        return data
