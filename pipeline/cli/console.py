"""The two terminal consoles every command prints through, with rich markup switched off.

Messages carry user text that looks like markup to rich: settings names ("lower
[tool.rescue.ingest] min_clip_seconds"), file names, transcript words. With markup on, rich takes
`[tool.rescue.ingest]` for a style tag and silently drops it. So the consoles print strings exactly
as given, and the few coloured words are `Text` pieces made by `styled`.

Output that is not a terminal (a log file, a pipe, CI) has no width of its own; rich would take 80
columns and cut every wider table to "…". There the consoles are wide enough for any table (COLUMNS,
when set, still wins), so a log holds every column.
"""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions
from rich.text import Text

UNBOUNDED_WIDTH = 1000  # columns for output that is not a terminal: a table is only as wide as its content


class RescueConsole(Console):
    """A rich console whose width, where the output is not a terminal, fits any table."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or os.environ.get("COLUMNS", "").isdigit():
            return size
        return ConsoleDimensions(UNBOUNDED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


console = RescueConsole(soft_wrap=True, markup=False, highlight=False)
err_console = RescueConsole(stderr=True, soft_wrap=True, markup=False, highlight=False)


def styled(text: str, style: str) -> Text:
    """`text` in `style` (e.g. "bold red"), never read as markup."""
    return Text(text, style=style)


def line(*parts: str | Text) -> Text:
    """One line joined from plain strings (printed as they are) and `styled` pieces."""
    return Text.assemble(*parts)
