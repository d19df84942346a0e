"""Settings of the ER/VP judge of `rescue evaluate` (`[tool.rescue.judge]`): an OpenAI-compatible chat endpoint.

No model is set by default, so nothing is sent anywhere unless the user names one (`--judge-model` or
`model` here); without one, ER/VP text is scored by the offline text similarity.
"""

from __future__ import annotations

from pipeline.llm.settings import ChatSettings

SECTION = "[tool.rescue.judge]"


class JudgeSettings(ChatSettings):
    """The chat endpoint's settings (pipeline/llm/settings.py); `model` empty = no judge."""
