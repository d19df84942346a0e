"""What push and pull ask the server before trusting it: its accounts, who counts, and who is a stranger."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.annotate.labelstudio import Client
from pipeline.annotate.roster import Stranger, adjudicator_accounts, counted_annotators, find_strangers
from pipeline.project import Project


@dataclass(frozen=True)
class Guards:
    users: dict[int, str]  # every account: id -> email
    owner_id: int  # the API token's owner: the pipeline's admin, whose changes are the pipeline's own
    counted: tuple[str, ...]  # whose answers count (the roster, or [tool.rescue.agreement] annotators)
    adjudicators: frozenset[str]
    strangers: tuple[Stranger, ...]

    @property
    def trusted(self) -> frozenset[int]:
        return frozenset({self.owner_id})


def guards_of(project: Project, client: Client, expected: Iterable[str] = (), adjudicators: Iterable[str] = ()
              ) -> Guards:
    expected, adjudicators = tuple(expected), tuple(adjudicators)
    owner_id, _ = client.whoami()
    accounts = client.accounts()
    return Guards(users={user_id: email for user_id, email, _ in accounts}, owner_id=owner_id,
                  counted=counted_annotators(project, expected, adjudicators),
                  adjudicators=adjudicator_accounts(project, adjudicators),
                  strangers=find_strangers(project, accounts, owner_id, expected, adjudicators))
