"""Annotator accounts: created through the organisation's invite link, passwords kept in a 0600 file, each
account put on the roster (`roster`: whose answers count) with its role and the day it joined."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal

from pipeline.annotate import labelstudio
from pipeline.annotate.labelstudio import Client, Connection
from pipeline.annotate.roster import Role, add_to_roster, passwords_file
from pipeline.annotate.server import read_secret, write_secret
from pipeline.errors import RescueError
from pipeline.project import Project


@dataclass(frozen=True)
class Account:
    email: str
    user_id: int
    status: Literal["created", "exists"]


def add_annotators(project: Project, connection: Connection, emails: list[str],
                   passwords: dict[str, str] | None = None, role: Role = "annotator") -> list[Account]:
    """Create the accounts (an existing one is left as it is); new passwords go to annotators.json (0600);
    every account named goes on the roster with `role`."""
    client = Client(connection)
    client.whoami()
    invite = client.invite_token()
    store = passwords_file(project)
    known = read_secret(store) if store.exists() else {}
    accounts: list[tuple[str, Literal["created", "exists"]]] = []
    for raw in emails:
        email = raw.strip().lower()
        if "@" not in email:
            raise RescueError(f"{raw!r} is not an email address", "annotator accounts are named by email")
        password = (passwords or {}).get(email) or known.get(email) or secrets.token_urlsafe(12)
        status = labelstudio.sign_up(connection.endpoint, invite, email, password)
        if status == "created":
            known[email] = password
            write_secret(store, known)  # after each account, so a failure later loses no password
        accounts.append((email, status))
    ids = {email.lower(): user_id for user_id, email in client.users().items()}
    add_to_roster(project, [(email, ids.get(email)) for email, _ in accounts], role)
    return [Account(email, ids[email], status) for email, status in accounts]


def annotator_password(project: Project, email: str) -> str:
    store = passwords_file(project)
    known = read_secret(store) if store.exists() else {}
    if email not in known:
        raise RescueError(f"no password for {email} in {store}", f"run `rescue annotators add {email}`")
    return known[email]
