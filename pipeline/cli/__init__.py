"""The `rescue` command line: parses arguments, shows progress, prints one-line errors. No logic lives here.

`app` (the group, `--root`, `--debug`, error handling), `console` (the two consoles), `options` (the project
and settings overrides a command runs with), `lock` (`@writer`), `aliases` (single-step commands as
`rescue build --only STEP`), and one module per family of commands. The families (pipeline/media, speech, annotate,
agreement, tasks, corpus, sample) never import this package (tests/test_imports.py).
"""

from pipeline.cli.app import main

__all__ = ["main"]
