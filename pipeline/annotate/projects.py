"""Which Label Studio projects hold the annotation work: one per scenario, schema version and annotator.

Independent labels: in the open-source edition every user sees every project, and a task's labeling view
shows every annotation of that task as tabs (only the label stream filters to the user's own work). So
each annotator labels the same rows in a project of their own, `RESCUE <scenario> - <schema id> / <email>`,
where no other account's answer is ever stored; the title is the key push and pull find it by. Label
Studio refuses titles over 50 characters, so a long email is shortened to its start plus `~` and six hex
digits of its sha256 (pull maps titles back to the server's accounts). The project of older pushes,
`RESCUE <scenario> - <schema id>` (every annotator in one project), is still pulled so that nothing
labelled there is lost; push no longer adds to it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.annotate.labelstudio import Client, ProjectInfo
from pipeline.errors import RescueError
from pipeline.records import Scenario
from pipeline.schema import SCENARIOS, AnnotationSchema

ANNOTATOR_MARK = " / "
ADJUDICATION_MARK = " - adjudication"
TITLE_MAX = 50  # Label Studio's limit on project titles
SHARED = "shared"  # the file name of a shared project's export in a snapshot (no email has no "@")


def project_title(schema: AnnotationSchema, scenario: Scenario) -> str:
    """The base name: one scenario and schema version (the shared project of older pushes had exactly this)."""
    return f"RESCUE {scenario} - {schema.id}"


def annotator_title(schema: AnnotationSchema, scenario: Scenario, email: str) -> str:
    return _owned_title(project_title(schema, scenario) + ANNOTATOR_MARK, email)


def is_annotator_project(title: str, email: str) -> bool:
    """Whether `title` is one of `email`'s own annotation projects (any scenario and schema version): what
    the gateway admits an annotator to (gateway.py). Adjudication and shared projects are nobody's own."""
    base, mark, _ = title.rpartition(ANNOTATOR_MARK)
    if not mark or not base.startswith("RESCUE ") or " - " not in base:
        return False
    try:
        return title == _owned_title(base + mark, email.strip().lower())
    except RescueError:
        return False


def is_adjudication_project(title: str) -> bool:
    """An adjudication project (`RESCUE <scenario> - <schema id> - adjudication`, agreement/queue_labelstudio.py):
    the gateway admits the configured adjudicators to these."""
    return title.startswith("RESCUE ") and title.endswith(ADJUDICATION_MARK) and ANNOTATOR_MARK not in title


def _owned_title(prefix: str, email: str) -> str:
    room = TITLE_MAX - len(prefix)
    if len(email) <= room:
        return prefix + email
    if room < 12:
        raise RescueError(f"{prefix!r} is too long for Label Studio's 50-character project titles",
                          "give the schema a shorter name or version")
    return f"{prefix}{email[:room - 7]}~{hashlib.sha256(email.encode()).hexdigest()[:6]}"


@dataclass(frozen=True)
class AnnotationProject:
    """One project holding annotation work; `annotator` None is the shared project of older pushes."""

    scenario: Scenario
    annotator: str | None
    info: ProjectInfo

    @property
    def export_name(self) -> str:
        """Its export's path inside a snapshot's exports/ folder, without `.json`."""
        return f"{self.scenario}/{self.annotator or SHARED}"


def annotation_projects(client: Client, schema: AnnotationSchema,
                        scenarios: Iterable[Scenario] = SCENARIOS) -> list[AnnotationProject]:
    """Every annotation project of the schema version on the server: the annotators' and a shared one.

    A project's annotator is the account whose title it carries; a project whose account is gone keeps
    the name from its title (any annotation in it then counts as another account's)."""
    emails = {email.lower() for email in client.users().values()}
    found = []
    for scenario in scenarios:
        base = project_title(schema, scenario)
        owners = {annotator_title(schema, scenario, email): email for email in emails}
        for info in client.projects_titled(base):
            if info.title == base:
                found.append(AnnotationProject(scenario, None, info))
            elif info.title.startswith(base + ANNOTATOR_MARK):
                label = info.title[len(base + ANNOTATOR_MARK):]
                found.append(AnnotationProject(scenario, owners.get(info.title, label), info))
    names = [p.export_name for p in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise RescueError(f"Label Studio at {client.connection.url} has more than one project for {', '.join(twice)}",
                          "rename or delete the extra ones so that push and pull know which one to use")
    return sorted(found, key=lambda p: (p.scenario, p.annotator or ""))
