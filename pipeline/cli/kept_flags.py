"""One rule for every flag that changes what a build step makes: it is kept.

Such a flag (e.g. `rescue preannotate --backend gold-model`, `rescue transcribe --model large-v3`,
`rescue agree --bootstrap 0`, `rescue freeze --no-media`) is written into `[tool.rescue.<section>]` of the
project's pyproject.toml before the step runs, and the command says so. The step's fingerprint covers its
settings section, so a flag that lasted one run would be undone by the next `rescue build`, or by any
single-step alias that runs the step again on its way (`rescue push` re-drafting with the default backend).
Kept in the file, the flag's effect stays until the user changes the setting there.

Not kept, because they are not settings of what a step makes: flags that say how or where this run works
(`-j`, `--executor`, `--standalone`, `--json`), flags that permit one thing once (`RUN_ONLY`), flags of
commands outside the build (`run-model`, `evaluate`, `preannotate --evaluate`, standalone runs), and the
RESCUE_ASR_* / RESCUE_DIARIZATION_* environment variables (they last as long as the environment does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.cli.console import console
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.settings import Settings, SettingsOverrides, load_settings

# Permissions for this run only: keeping them would silently permit every later shrink or loss.
RUN_ONLY = frozenset({"build.allow_shrink", "annotate.accept_deleted"})


def _value(settings: Settings, dotted: str) -> Any:
    found: Any = settings
    for name in dotted.split("."):
        found = getattr(found, name)
    return found


def _toml_value(value: Any) -> str:
    import tomlkit

    return tomlkit.item(list(value) if isinstance(value, tuple) else value).as_string()


def setting_lines(values: tuple[tuple[str, Any], ...]) -> str:
    """`[tool.rescue.<section>]` headers with their `key = value` lines, as a person would add them."""
    sections: dict[str, list[str]] = {}
    for dotted, value in values:
        section, _, key = dotted.rpartition(".")
        sections.setdefault(section, []).append(f"{key} = {_toml_value(value)}")
    return "; ".join(f"[tool.rescue.{section}] {', '.join(lines)}" for section, lines in sections.items())


def _written(text: str, values: tuple[tuple[str, Any], ...]) -> str:
    """`text` (pyproject.toml) with each dotted key set under [tool.rescue], comments and layout kept."""
    import tomlkit

    doc = tomlkit.parse(text)
    for dotted, value in values:
        *sections, key = ["tool", "rescue", *dotted.split(".")]
        level: Any = doc
        for depth, name in enumerate(sections):
            if name not in level:  # the levels above the section only hold tables: no header of their own
                level[name] = tomlkit.table(is_super_table=depth < len(sections) - 1)
            level = level[name]
        level[key] = list(value) if isinstance(value, tuple) else value
    text = tomlkit.dumps(doc)
    return text if text.endswith("\n") else text + "\n"


def keep_step_flags(project: Project, flags: SettingsOverrides,
                    base: SettingsOverrides = SettingsOverrides()) -> SettingsOverrides:
    """Write the step-affecting `flags` (see the module's doc) into pyproject.toml where the file does not already
    say the same, saying so; returns this run's overrides (`base`, the environment's, then `flags`). Nothing is
    written when a flag's value is invalid (the usual settings error) or the file cannot be edited safely."""
    from pipeline.catalog import load_catalog
    from pipeline.store import write_text_atomic

    wanted = load_settings(project.root, base | flags)  # an invalid value stops here, before the file changes
    if not load_catalog(project):
        return base | flags  # the step cannot run (the command says why): nothing to keep yet
    current = load_settings(project.root)
    keep = tuple((key, value) for key, value in flags.values
                 if key not in RUN_ONLY and _value(current, key) != _value(wanted, key))
    if not keep:
        return base | flags
    path = project.root / "pyproject.toml"
    where = project.rel_or_abs(path)
    original = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = setting_lines(keep)
    fix = f"add {lines} to {where} yourself (then run the command without the flag)"
    try:
        edited = _written(original, keep)
    except Exception as exc:  # tomlkit refuses layouts it cannot extend (e.g. a section given as a dotted key)
        raise RescueError(f"{where}: cannot keep this command's setting(s) there ({exc})", fix) from exc
    write_text_atomic(path, edited)
    reread = load_settings(project.root)
    if any(_value(reread, key) != _value(wanted, key) for key, _ in keep):
        write_text_atomic(path, original)  # never leave a file that says something else than asked
        raise RescueError(f"{where}: writing this command's setting(s) did not give {lines}", fix)
    console.print(f"kept in {where}: {lines} (flags that change what a step makes stay in effect for every later "
                  "build and step; edit or remove the line there to change it)", highlight=False)
    return base | flags


def relative_to_root(project: Project, path: Path) -> str:
    """A file named on the command line as settings store it: relative to the project root when inside it."""
    resolved = (path if path.is_absolute() else Path.cwd() / path).resolve()
    return resolved.relative_to(project.root).as_posix() if resolved.is_relative_to(project.root) else str(resolved)
