"""The API key: read from the environment variable the settings name, and kept out of every text we produce."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pipeline.errors import RescueError
from pipeline.llm.settings import ChatSettings

NO_KEY = "no-key"  # what the SDK gets for servers that need none (it refuses an empty key)


def read_key(settings: ChatSettings, section: str, environ: Mapping[str, str] = os.environ) -> str:
    if settings.api_key_env is None:
        return NO_KEY
    key = environ.get(settings.api_key_env, "").strip()
    if not key:
        raise RescueError(
            f"the API key for {settings.base_url} is missing: environment variable {settings.api_key_env} "
            f"(setting {section} api_key_env) is not set",
            f"export {settings.api_key_env}=<your key>, or set {section} api_key_env to the variable that "
            "holds it (empty for a local server that needs no key)")
    return key


def redact(text: str, key: str) -> str:
    """`text` with the key (and any long part of it a server might echo) replaced by ***."""
    if key == NO_KEY or not key:
        return text
    text = text.replace(key, "***")
    # Servers echo keys partly masked (sk-abc...wxyz): hide any 8-character run of the key too.
    for start in range(0, max(0, len(key) - 7)):
        part = key[start:start + 8]
        if part in text:
            text = text.replace(part, "***")
    return text
