"""Input modes (spec section 5): which annotated cues a model sees, and which tasks take video.

A release's task records carry every cue; `prompt_record_for_mode` cuts a record down to what one mode
shows. In a release frozen with media, ER/VP/SSP records also carry the row clips:

- each row record that has a clip (`prior_context[i]`, and for ER/VP the instance itself, which is the
  current row) carries `clip_path` (relative to the release folder, posix) and `clip_duration_sec`;
- the instance carries `video_attachments`: the clip paths in the order the paper's scripts attach them
  (ER/VP: the prior-context clips, then the current row's clip; SSP: the prior-context clips only);
- each row record whose clip is attached carries `video_attachment_index`: its 1-based position in
  `video_attachments`, so the text can point at "video 3".

A text-only release has none of these keys. Every mode but `turn_video_audio` drops them.
"""

from __future__ import annotations

from typing import Any

from pipeline.errors import RescueError

MODES = ("dialogue", "audio", "visual", "audiovisual", "turn_video_audio")
ALIASES = {"text": "dialogue", "frames": "turn_video_audio", "speaker_frames_audio": "turn_video_audio"}
VIDEO_MODE = "turn_video_audio"
AUDIO_FIELDS = ("tone_of_voice",)
VISUAL_FIELDS = ("body_posture", "facial_expressions", "self_directed_behavior", "interaction_behavior")
MEDIA_FIELDS = ("clip_path", "clip_duration_sec", "video_attachment_index")  # on a row record
ATTACHMENTS = "video_attachments"  # on an instance
CONTEXT_KEYS = ("prior_context", "current_turn")  # keys whose values are row records (a list or one)

_HIDDEN = {
    "dialogue": AUDIO_FIELDS + VISUAL_FIELDS,
    "audio": VISUAL_FIELDS,
    "visual": AUDIO_FIELDS,
    "audiovisual": (),
    "turn_video_audio": AUDIO_FIELDS + VISUAL_FIELDS,  # the clips (with their sound) replace the cue text
}


def canonical_mode(name: str) -> str:
    mode = ALIASES.get(name, name)
    if mode not in MODES:
        raise RescueError(f"unknown input mode {name!r}",
                          f"use one of {', '.join(MODES)} (aliases: {', '.join(f'{a}={m}' for a, m in ALIASES.items())})")
    return mode


def video_attachments(record: dict[str, Any]) -> list[str]:
    return list(record.get(ATTACHMENTS) or [])


def in_mode(task: str, record: dict[str, Any], mode: str) -> bool:
    """Whether an instance takes part in a mode: in the video mode it needs at least one clip (spec: SSP
    needs at least one context clip; ER/VP always have their own row's clip in a media release)."""
    return canonical_mode(mode) != VIDEO_MODE or bool(video_attachments(record))


def prompt_record_for_mode(record: dict[str, Any], mode: str) -> dict[str, Any]:
    """A model-facing record cut down to one mode: the hidden cue fields leave the instance and every row
    record under `prior_context` / `current_turn`; media keys stay only in the video mode."""
    mode = canonical_mode(mode)
    drop = set(_HIDDEN[mode])
    if mode != VIDEO_MODE:
        drop |= {*MEDIA_FIELDS, ATTACHMENTS}

    def cut(row: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k not in drop}

    out = cut(record)
    for key in CONTEXT_KEYS:
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [cut(r) if isinstance(r, dict) else r for r in value]
        elif isinstance(value, dict):
            out[key] = cut(value)
    return out
