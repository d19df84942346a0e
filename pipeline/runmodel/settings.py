"""Settings of `rescue run-model` (`[tool.rescue.run_model]`): the chat endpoint's (pipeline/llm) plus how
instances become requests. Every flag of the command overrides one of these for that run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from pipeline.errors import masked_url
from pipeline.llm.settings import ChatSettings

SECTION = "[tool.rescue.run_model]"
LEAK_FREE, PAPER = "leak-free", "paper"
BATCHINGS = (LEAK_FREE, PAPER)


class RunModelSettings(ChatSettings):
    batch_size: int = Field(5, ge=1, le=50, description="instances of one sample per request (the text modes; "
                            "the video mode sends one instance per request, see docs/run-model.md)")
    batching: Literal["leak-free", "paper"] = Field(LEAK_FREE, description="leak-free: a request never holds "
                                                    "two instances where one's prompt shows the other's answer; "
                                                    "paper: the paper's per-sample batches, answers visible (the "
                                                    "run is marked so), see docs/run-model.md")
    media_base_url: str | None = Field(None, description="send clips as <media_base_url>/<clip_path> for servers "
                                       "that fetch URLs (the release folder served there); unset: as data URLs")
    video_fps: float | None = Field(1.0, gt=0, description="ER/VP video items carry this fps (the paper's 1); "
                                    "SSP's carry none, as the paper's scripts send them")
    extra_headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent with every request, "
                                          "e.g. {\"X-DashScope-OssResourceResolve\" = \"enable\"}; only their names "
                                          "are recorded")

    @field_validator("media_base_url")
    @classmethod
    def _plain_media_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not value.startswith(("http://", "https://")) or "@" in value.split("/")[2]:
            raise ValueError(f"media_base_url {masked_url(value)!r} must be an http(s) URL without credentials")
        return value.rstrip("/")
