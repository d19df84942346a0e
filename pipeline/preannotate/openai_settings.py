"""Settings of the `openai` pre-annotation backend: the chat endpoint's (pipeline/llm) plus what goes into a prompt.

Meant to live at `[tool.rescue.preannotate.openai]`; `SECTION` names it in error messages.
"""

from __future__ import annotations

from pydantic import Field

from pipeline.llm.settings import ChatSettings

SECTION = "[tool.rescue.preannotate.openai]"


class OpenAIDraftSettings(ChatSettings):
    context_before: int = Field(4, ge=0, le=50, description="rows before the drafted row shown in the prompt")
    context_after: int = Field(1, ge=0, le=50, description="rows after it")
    keyframes: bool = Field(False, description="send the row's keyframes as images (multimodal models only)")
    max_keyframes: int = Field(2, ge=1, le=16, description="keyframes per row when `keyframes` is on")
