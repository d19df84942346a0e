"""Whose work an exported annotation is, by everything Label Studio 1.23 records about who touched it.

What the open-source server stores (label_studio/tasks/api.py, tasks/models.py, data_export):
- `completed_by`: the account the annotation is credited to. On create it is the request's user unless the
  request names another account (`"completed_by": <id>` in the body is accepted from any account).
- `updated_by`: the account of the last request that created or changed it. Create sets it to the request's
  user (whatever `completed_by` says); `PATCH /api/annotations/<id>` sets it to the request's user.
- `last_created_by`: set where the edition keeps an annotation history (Enterprise); null in the open-source
  edition, read when present.
- drafts: a draft never changes an annotation's result, and the full export lists only the drafts' ids;
  pull does not read them.
The open-source edition keeps no history of earlier versions (no AnnotationHistory model), so only the last
writer is known. And `updated_by`, `completed_by` and `last_created_by` are writable fields of the API's
annotation serializer: a PATCH that sets `updated_by` to the annotator's own id leaves no trace at all. Only
the gateway in front of the server stops that (see docs/annotation.md).

An annotation counts as its annotator's when nobody but that annotator (or the pipeline's own admin account,
whose token only push, pull and the demo's stored answers use) is named by any of these.
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
    writer = account_id(annotation.get("updated_by"))
    if writer is not None and writer not in allowed:
        return (f"changed by {name(writer)} at {when} (the server's updated_by), credited to {credited}: not "
                f"{credited}'s own answer")
    creator = account_id(annotation.get("last_created_by"))
    if creator is not None and creator not in allowed:
        return f"created by {name(creator)} (the server's last_created_by), credited to {credited}"
    return None
