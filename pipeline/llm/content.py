"""The messages of a chat request: a role and content items, in the chat-completions wire format.

Items are text, images or videos (a data URL made from a file, or a URL the server fetches). Videos are
`{"type": "video_url", "video_url": {"url": ..., "fps": ...}}` items, as Qwen-VL-style OpenAI-compatible
servers (DashScope, vLLM) take them: `rescue run-model` sends row clips so in the turn_video_audio mode.
"""

from __future__ import annotations

import base64
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pipeline.errors import RescueError

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class TextItem:
    text: str

    def wire(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True)
class ImageItem:
    url: str  # a data URL (data:image/jpeg;base64,...) or an http(s) URL the server fetches
    detail: Literal["auto", "low", "high"] = "low"  # keyframes are thumbnails: low detail costs the fewest tokens

    def wire(self) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": self.url, "detail": self.detail}}


@dataclass(frozen=True)
class VideoItem:
    url: str  # a data URL (data:video/mp4;base64,...) or an http(s) URL the server fetches
    fps: float | None = None  # frames per second the server samples; None leaves it to the server

    def wire(self) -> dict[str, Any]:
        video: dict[str, Any] = {"url": self.url}
        if self.fps is not None:
            video["fps"] = self.fps
        return {"type": "video_url", "video_url": video}


ContentItem = TextItem | ImageItem | VideoItem


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: tuple[ContentItem, ...]

    @classmethod
    def text(cls, role: Role, text: str) -> ChatMessage:
        return cls(role, (TextItem(text),))

    def wire(self) -> dict[str, Any]:
        # Text-only messages go as a plain string: every OpenAI-compatible server accepts that form.
        if all(isinstance(item, TextItem) for item in self.content):
            texts = [item.text for item in self.content if isinstance(item, TextItem)]
            return {"role": self.role, "content": "\n\n".join(texts)}
        return {"role": self.role, "content": [item.wire() for item in self.content]}


def data_url(path: Path) -> str:
    """A file as a data URL (base64), for servers that cannot fetch files themselves."""
    mime = mimetypes.guess_type(path.name)[0]
    if mime is None:
        raise RescueError(f"{path}: unknown media type (by its suffix)", "use .jpg, .png, .webp or .mp4 files")
    try:
        payload = base64.b64encode(path.read_bytes()).decode("ascii")
    except FileNotFoundError as exc:
        raise RescueError(f"{path} is missing", "re-run the step that makes it (e.g. `rescue ingest`)") from exc
    return f"data:{mime};base64,{payload}"
