"""Which Label Studio projects hold the annotation work: one per scenario, schema version and annotator.

Independent labels: in the open-source edition every user sees every project, and a task's labeling view
shows every annotation of that task as tabs (only the label stream filters to the user's own work). So
each annotator labels the same rows in a project of their own, `RESCUE <scenario> - <schema id> -
annotator <email>`, where no other account's answer is ever stored; the title is the key push and pull
find it by. The project of older pushes, `RESCUE <scenario> - <schema id>` (every annotator in one
project), is still pulled so that nothing labelled there is lost; push no longer adds to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.annotate.labelstudio import Client, ProjectInfo
from pipeline.errors import RescueError
from pipeline.records import Scenario
from pipeline.schema import SCENARIOS, AnnotationSchema

ANNOTATOR_MARK = " - annotator "
SHARED = "shared"  # the file name of a shared project's export in a snapshot (no email has no "@")


def project_title(schema: AnnotationSchema, scenario: Scenario) -> str:
    """The base name: one scenario and schema version (the shared project of older pushes had exactly this)."""
    return f"RESCUE {scenario} - {schema.id}"


def annotator_title(schema: AnnotationSchema, scenario: Scenario, email: str) -> str:
    return f"{project_title(schema, scenario)}{ANNOTATOR_MARK}{email}"


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


def annotator_roster(client: Client, expected: Iterable[str] = (), adjudicators: Iterable[str] = ()) -> tuple[str, ...]:
    """Who gets annotation projects: `expected` when given ([tool.rescue.agreement] annotators), else every
    account of the organisation except the API token's owner and the adjudicators."""
    chosen = {email.strip().lower() for email in expected}
    if not chosen:
        owner, _ = client.whoami()
        chosen = {email.lower() for user_id, email in client.users().items() if user_id != owner}
    return tuple(sorted(chosen - {email.strip().lower() for email in adjudicators}))


def annotation_projects(client: Client, schema: AnnotationSchema,
                        scenarios: Iterable[Scenario] = SCENARIOS) -> list[AnnotationProject]:
    """Every annotation project of the schema version on the server: the annotators' and a shared one."""
    found = []
    for scenario in scenarios:
        base = project_title(schema, scenario)
        for info in client.projects_titled(base):
            if info.title == base:
                found.append(AnnotationProject(scenario, None, info))
            elif info.title.startswith(base + ANNOTATOR_MARK):
                found.append(AnnotationProject(scenario, info.title[len(base + ANNOTATOR_MARK):], info))
    names = [p.export_name for p in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise RescueError(f"Label Studio at {client.connection.url} has more than one project for {', '.join(twice)}",
                          "rename or delete the extra ones so that push and pull know which one to use")
    return sorted(found, key=lambda p: (p.scenario, p.annotator or ""))
