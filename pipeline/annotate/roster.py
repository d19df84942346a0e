"""The roster: the accounts whose answers count, kept by `rescue annotators add` with the day each joined.

In the open-source Label Studio every account of the organisation has the whole API, and anyone holding
the invite link can sign up. So the server's list of users is not who counts: `build/labelstudio/
roster.json` is (next to the passwords in annotators.json; written by `rescue annotators add`, and by the
build when it re-creates the demo's stored sample answers). `[tool.rescue.agreement] annotators`, when set,
replaces the roster's annotators; `adjudicators` there (and the roster's adjudicators) never get annotation
projects. An account that is neither, nor the API token's owner, is a stranger: push, pull and agree name it
with the day the server says it joined, and its answers are quarantined.

A project from before the roster has no roster.json: then the accounts `rescue annotators add` made
(annotators.json) are the roster, as they were the annotators the user added.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from pipeline import layout
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Record
from pipeline.store import write_text_atomic

Role = Literal["annotator", "adjudicator"]


class RosterEntry(Record):
    email: str
    role: Role = "annotator"
    joined: str = Field(description="UTC time the account was added to the roster (ISO 8601)")
    user_id: int | None = Field(None, description="the server's id of the account when it was added")


class Stranger(Record):
    """An account of the server that is not on the roster (nor an adjudicator, nor the token's owner)."""

    email: str
    user_id: int
    joined: str = Field(description="when the server says the account was made (its date_joined), else ''")


def roster_file(project: Project) -> Path:
    return layout.labelstudio_dir(project) / "roster.json"


def passwords_file(project: Project) -> Path:
    """The annotators' generated passwords (mode 600), written by `accounts.add_annotators`."""
    return layout.labelstudio_dir(project) / "annotators.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def load_roster(project: Project) -> tuple[RosterEntry, ...]:
    """The roster; before roster.json existed, the accounts `rescue annotators add` made (annotators.json)."""
    path = roster_file(project)
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return tuple(RosterEntry.model_validate(item) for item in data["annotators"])
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
            raise RescueError(f"{project.rel_or_abs(path)} is not a readable roster ({exc})",
                              "restore it from a backup, or remove it and add the annotators again with "
                              "`rescue annotators add EMAIL...`") from exc
    legacy = passwords_file(project)
    if not legacy.is_file():
        return ()
    try:
        emails = sorted(json.loads(legacy.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise RescueError(f"{project.rel_or_abs(legacy)} is not readable ({exc})",
                          "restore it, or add the annotators again with `rescue annotators add EMAIL...`") from exc
    since = datetime.fromtimestamp(legacy.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
    return tuple(RosterEntry(email=str(email).lower(), joined=since) for email in emails)


def add_to_roster(project: Project, accounts: Iterable[tuple[str, int | None]], role: Role = "annotator"
                  ) -> list[RosterEntry]:
    """Put the accounts (email, server id) on the roster with `role`; one already there keeps its entry
    and day joined (its role changes when asked). Returns the new or changed entries."""
    entries = {entry.email: entry for entry in load_roster(project)}
    changed = []
    for email, user_id in accounts:
        email = email.strip().lower()
        old = entries.get(email)
        if old is not None and old.role == role and (old.user_id is not None or user_id is None):
            continue
        entry = (old.model_copy(update={"role": role, "user_id": old.user_id or user_id}) if old is not None else
                 RosterEntry(email=email, role=role, joined=_now(), user_id=user_id))
        entries[email] = entry
        changed.append(entry)
    if changed or not roster_file(project).is_file():
        path = roster_file(project)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"annotators": [e.model_dump(mode="json") for e in sorted(entries.values(),
                                                                                     key=lambda e: e.email)]},
                          indent=1, ensure_ascii=False) + "\n"
        write_text_atomic(path, text)
        os.chmod(path, 0o600)
    return changed


def adjudicator_accounts(project: Project, adjudicators: Iterable[str] = ()) -> frozenset[str]:
    """[tool.rescue.agreement] adjudicators and the roster's adjudicators."""
    named = {email.strip().lower() for email in adjudicators}
    return frozenset(named | {e.email for e in load_roster(project) if e.role == "adjudicator"})


def counted_annotators(project: Project, expected: Iterable[str] = (), adjudicators: Iterable[str] = ()
                       ) -> tuple[str, ...]:
    """Whose answers count and who gets annotation projects: `expected` ([tool.rescue.agreement] annotators)
    when given, else the roster's annotators; never an adjudicator."""
    chosen = {email.strip().lower() for email in expected}
    if not chosen:
        chosen = {e.email for e in load_roster(project) if e.role == "annotator"}
    return tuple(sorted(chosen - adjudicator_accounts(project, adjudicators)))


def find_strangers(project: Project, accounts: Iterable[tuple[int, str, str]], owner_id: int,
                   expected: Iterable[str] = (), adjudicators: Iterable[str] = ()) -> tuple[Stranger, ...]:
    """The server's accounts (id, email, date joined) that are on no roster and are not the token's owner."""
    known = ({e.email for e in load_roster(project)} | {e.strip().lower() for e in expected}
             | adjudicator_accounts(project, adjudicators))
    return tuple(Stranger(email=email, user_id=user_id, joined=joined)
                 for user_id, email, joined in sorted(accounts, key=lambda a: a[1])
                 if user_id != owner_id and email.lower() not in known)


def stranger_line(stranger: Stranger, answers: int | None = None) -> str:
    """One line naming a stranger, for push, pull and agree."""
    when = f"joined the server {stranger.joined}" if stranger.joined else "joined the server at an unknown time"
    counted = "" if answers is None else f"; {answers} answer(s) quarantined"
    return (f"account {stranger.email} (user {stranger.user_id}, {when}) is not on the roster: its answers do not "
            f"count{counted} (if it is a new annotator: `rescue annotators add {stranger.email}`)")
