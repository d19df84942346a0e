"""Whose work an exported annotation is, by everything Label Studio 1.23 records about who touched it.

What the open-source server stores (label_studio/tasks/api.py, tasks/models.py, tasks/serializers.py):
- `completed_by`: the account the annotation is credited to. On create it is the request's user unless the
  request names another account (`"completed_by": <id>` in the body is accepted from any account), and a
  PATCH may change it too.
- `updated_by`: `Annotation.save()` sets it to the user of the request, on every create and every change
  through the API (a PATCH that names someone else as `updated_by` is overruled by save()). So it names the
  last account that wrote the annotation through the API.
- Annotations imported together with their task (`POST /api/projects/<id>/import` with `annotations`) are
  bulk-created without save(): `updated_by` stays empty, and `completed_by` is whatever the import named.
  The pipeline never imports annotations (push imports tasks with predictions only; the demo's stored answers
  are created through the API), so an empty `updated_by` means such an import.
- `last_created_by`: kept where the edition has an annotation history (Enterprise); null in the open-source
  edition, read when present. The open-source edition keeps no history of earlier versions (no
  AnnotationHistory model): only the last writer is known.
- drafts: a draft never changes an annotation's result, and the full export lists only the drafts' ids;
  pull does not read them.

An annotation counts as its annotator's when nobody but that annotator (or the pipeline's own admin account,
whose token only push, pull and the demo's stored answers use) is named by any of these. What the records
cannot show (an earlier change the annotator then saved over; anything done with the admin's token) is in
docs/annotation.md, with what the gateway prevents.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any


def account_id(value: Any) -> int | None:
    """An account reference of the export: an id, or an object with an id (expanded exports)."""
    if isinstance(value, dict):
        value = value.get("id")
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def authorship_problem(annotation: Mapping[str, Any], users: Mapping[int, str], trusted: Collection[int]) -> str | None:
    """Why the annotation is not (only) the work of its `completed_by` account; None when it is."""
    author = account_id(annotation.get("completed_by"))
    allowed = {author, *trusted}

    def name(user_id: int) -> str:
        return users.get(user_id, f"user-{user_id}")

    credited = name(author) if author is not None else "nobody"
    when = str(annotation.get("updated_at") or annotation.get("created_at") or "an unknown time")
    if "updated_by" in annotation and annotation["updated_by"] is None:
        return (f"imported with its task, credited to {credited} (the server records no account that made it: "
                "empty updated_by); the pipeline never imports annotations")
    writer = account_id(annotation.get("updated_by"))
    if writer is not None and writer not in allowed:
        return (f"changed by {name(writer)} at {when} (the server's updated_by), credited to {credited}: not "
                f"{credited}'s own answer")
    creator = account_id(annotation.get("last_created_by"))
    if creator is not None and creator not in allowed:
        return f"created by {name(creator)} (the server's last_created_by), credited to {credited}"
    return None
