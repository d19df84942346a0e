"""The prompt of one row's draft: the schema's field descriptions and label definitions, then the session.

One source for annotators and models: the field descriptions and `AnnotationSchema.label_guide` (the
definitions and precedence rules in annotation_schemas/) that the Label Studio form shows as hints.
The system message depends only on the scenario and the kind of row (therapist or client), so
providers that cache a repeated prefix (OpenAI, Gemini, vLLM) charge it once per session and kind;
the user message holds the session's people, the context rows, the row and, optionally, its keyframes.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.llm.content import ChatMessage, ContentItem, ImageItem, TextItem
from pipeline.records import Scenario, TranscriptRow
from pipeline.schema import AnnotationSchema, SchemaField, SubField
from pipeline.preannotate.draft_schema import CONFIDENCE, asked_fields

KIND_WORDS = {"entity": "one name", "entities": "a list of names", "label": "one label", "text": "text",
              "integer": "a whole number", "row_refs": "a list of row numbers", "items": "a list of items"}


def _kind(part: SchemaField | SubField) -> str:
    words = KIND_WORDS[part.type]
    if part.type == "integer":
        words += f" {part.min}-{part.max}"
    if part.type == "label" and getattr(part, "allow_empty", False):
        words += ' or "" for none'
    return words


def _guide(schema: AnnotationSchema, label_set: str, scenario: Scenario, indent: str) -> list[str]:
    guide = schema.label_guide(label_set, scenario)
    defined = dict(guide.definitions)
    lines = [f"{indent}labels:"]
    lines += [f"{indent}  {label}: {defined.get(label, '(no definition)')}"
              for label in schema.labels(label_set, scenario)]
    if guide.rules:
        lines.append(f"{indent}rules:")
        lines += [f"{indent}  - {rule}" for rule in guide.rules]
    return lines


def _field_lines(schema: AnnotationSchema, field: SchemaField, scenario: Scenario) -> list[str]:
    lines = [f"- {field.name} ({_kind(field)}): {field.description}".rstrip(": ")]
    if field.labels:
        lines += _guide(schema, field.labels, scenario, "    ")
    for sub in field.items:
        lines.append(f"    - {sub.name} ({_kind(sub)})")
        if sub.labels:
            lines += _guide(schema, sub.labels, scenario, "        ")
    return lines


def system_message(schema: AnnotationSchema, scenario: Scenario, speaker_kind: str, fields: Sequence[SchemaField]
                   ) -> ChatMessage:
    group = schema.group_labels[scenario]
    lines = [
        f"You draft the annotation of one row of a {scenario} therapy session transcript ({schema.id} schema). "
        f"The row is spoken by {speaker_kind}. Human annotators check and correct your draft: be faithful to "
        "what is said, and prefer an empty list to a guess.",
        f"Names: use only the session's participants (listed with the row), {schema.therapist} for the therapist, "
        f"and {group} for the whole {scenario} as one addressee ({group} stands alone in a list). "
        "A target never includes the speaker.",
        f"Answer with one JSON object that follows the response schema, no other text. Give every field, and in "
        f"`{CONFIDENCE}` your confidence from 0 to 1 that annotators keep each field's value unchanged.",
        "", "Fields:"]
    for field in fields:
        lines += _field_lines(schema, field, scenario)
    return ChatMessage.text("system", "\n".join(lines))


def _row_line(row: TranscriptRow) -> str:
    return f"[{row.row_index}] {row.speaker} ({row.start:.1f}-{row.end:.1f} s): {row.text}"


def user_message(session_id: str, scenario: Scenario, participants: Sequence[str], schema: AnnotationSchema,
                 rows: Sequence[TranscriptRow], position: int, before: int, after: int,
                 images: Sequence[str] = ()) -> ChatMessage:
    """`position` is the row's place in `rows` (all the session's rows, in order); `images` are data URLs."""
    row = rows[position]
    lines = [f"Session {session_id} ({scenario}). Participants: {', '.join(participants)}; therapist: "
             f"{schema.therapist}; group label: {schema.group_labels[scenario]}.",
             f"Rows are numbered 1-{len(rows)}; row numbers in your answer refer to these numbers."]
    earlier = rows[max(0, position - before):position]
    if earlier:
        lines += ["", "Rows before:", *map(_row_line, earlier)]
    lines += ["", f"Row to draft (row_id {row.row_id}):", _row_line(row)]
    if row.target:
        lines.append(f"The transcript's guess of who it addresses: {', '.join(row.target)}")
    if row.overlap:
        lines.append("Another speaker talks during part of this row.")
    later = rows[position + 1:position + 1 + after]
    if later:
        lines += ["", "Rows after:", *map(_row_line, later)]
    content: list[ContentItem] = [TextItem("\n".join(lines))]
    if images:
        content.append(TextItem(f"Keyframes of the video during this row ({len(images)}):"))
        content += [ImageItem(url) for url in images]
    return ChatMessage("user", tuple(content))


def row_messages(schema: AnnotationSchema, scenario: Scenario, session_id: str, participants: Sequence[str],
                 rows: Sequence[TranscriptRow], position: int, before: int, after: int,
                 images: Sequence[str] = ()) -> tuple[ChatMessage, ChatMessage]:
    speaker = rows[position].speaker
    kind = "the therapist" if speaker == schema.therapist else "a client"
    return (system_message(schema, scenario, kind, asked_fields(schema, speaker)),
            user_message(session_id, scenario, participants, schema, rows, position, before, after, images))
