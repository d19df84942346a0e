"""Settings of the corpus steps of `rescue build` (`[tool.rescue.build]` in pyproject.toml)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class BuildSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    release_version: str = Field("v1", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                                 description="the release `rescue build` freezes: build/release/<version>/")
    release_license: str = Field("other", pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$",
                                 description="the release card's `license:` field: the source videos' licence, "
                                             "which the project does not own (e.g. cc-by-nc-4.0)")
    release_citation: str = Field(
        "", description="how to cite the data (e.g. the paper's BibTeX): the card's Citation section and Croissant's "
                        "citeAs; required for a public release")
    release_public: bool = Field(
        False, description="the release is for strangers: freezing it refuses an unset release_citation and the "
                           "default licence `other`")
    release_media: bool = Field(
        True, description="pack the row clips that ER, VP and SSP attach under the release's media/ folder "
                          "(the turn_video_audio input mode); false: a text-only release")
    allow_shrink: bool = Field(
        False, description="let the freeze step replace the release with one holding fewer sessions or instances "
                           "(normally refused, saying what would be lost); `rescue freeze --allow-shrink` sets it "
                           "for one run")
    sample_annotations: bool = Field(
        True, description="apply the stored annotation export of the built-in sample sessions when the server "
                          "holds no annotations for them")
