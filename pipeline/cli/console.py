"""The two terminal consoles every command prints through, with rich markup switched off.

Messages carry user text that looks like markup to rich: settings names ("lower
[tool.rescue.ingest] min_clip_seconds"), file names, transcript words. With markup on, rich takes
`[tool.rescue.ingest]` for a style tag and silently drops it. So the consoles print strings exactly
as given, and the few coloured words are `Text` pieces made by `styled`.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

console = Console(soft_wrap=True, markup=False, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)


def styled(text: str, style: str) -> Text:
    """`text` in `style` (e.g. "bold red"), never read as markup."""
    return Text(text, style=style)


def line(*parts: str | Text) -> Text:
    """One line joined from plain strings (printed as they are) and `styled` pieces."""
    return Text.assemble(*parts)
