"""The package's import graph, read from the source with `ast` (nothing is imported): no circles between modules
and no import that runs up to a higher layer (docs/build.md "Layers").

Every `import` counts, wherever it stands: at module level, inside a function (a lazy import still closes a
circle when it runs) or under `if TYPE_CHECKING`. Not counted: the implicit import of a parent package
(`pipeline.speech.x` loads `pipeline/speech/__init__.py`); a package that re-exports its own submodules is
not a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"

# Layers, highest first: a module may import its own layer and those below, never one above.
CLI = ("pipeline.cli", "pipeline.__main__")
SAMPLE = ("pipeline.sample", "pipeline.sample_sessions")  # the demo-data maker drives the build like a user
ENGINE = ("pipeline.engine", "pipeline.runner", "pipeline.session_run", "pipeline.stages", "pipeline.executors",
          "pipeline.corpus")
FAMILIES = ("pipeline.media", "pipeline.speech", "pipeline.annotate", "pipeline.preannotate", "pipeline.agreement",
            "pipeline.tasks", "pipeline.runmodel")
LAYERS = (("cli", CLI), ("sample", SAMPLE), ("engine", ENGINE), ("families", FAMILIES))  # the rest: ground floor
FAMILY_PACKAGES = FAMILIES + ("pipeline.corpus", "pipeline.sample", "pipeline.engine", "pipeline.executors")

# Circles allowed (none: the worker's unit of work, pipeline/session_run.py, sits below the runner and the executors).
ALLOWED_CIRCLES: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The pipeline modules `module` imports: `from a import b` names module a.b when b is a module, else a."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "pipeline")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "pipeline":
                continue
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    return {module: {target for target in _imported(module, path, known) if target != module and target in known}
            for module, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def layer(module: str) -> int:
    """0 for the CLI, counting down to the ground floor. A family's settings modules (`settings`, `*_settings`)
    are ground floor: the settings loader gathers every section, and a section imports nothing above it."""
    if _within(module, FAMILY_PACKAGES) and module.rsplit(".", 1)[-1].endswith("settings"):
        return len(LAYERS)
    return next((rank for rank, (_, prefixes) in enumerate(LAYERS) if _within(module, prefixes)), len(LAYERS))


def test_the_graph_reader_sees_lazy_imports_and_finds_circles() -> None:
    """The checks below prove little unless the reader sees imports inside functions and finds circles."""
    graph = import_graph()
    assert "pipeline.cli.printing" in graph["pipeline.cli.build"]  # imported inside `build`
    assert "pipeline.cli" in graph["pipeline.__main__"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_import_circles() -> None:
    found = [sorted(c) for c in circles(import_graph()) if frozenset(c) not in ALLOWED_CIRCLES]
    assert not found, f"import circles: {found}"


def test_no_family_imports_the_cli() -> None:
    graph = import_graph()
    upward = sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                    if _within(target, CLI) and not _within(module, CLI))
    assert not upward, f"only the CLI may import the CLI: {upward}"


def test_no_import_runs_up_to_a_higher_layer() -> None:
    graph = import_graph()
    upward = sorted(f"{module} ({LAYERS[layer(module)][0] if layer(module) < len(LAYERS) else 'ground'}) -> "
                    f"{target} ({LAYERS[layer(target)][0]})"
                    for module, targets in graph.items() for target in targets if layer(target) < layer(module))
    assert not upward, f"imports up to a higher layer: {upward}"


STEP_PACKAGES = ("pipeline.corpus", "pipeline.annotate")  # where the corpus steps are declared, beside their functions


def test_no_step_package_imports_the_engine_back() -> None:
    """The engine imports the steps' declarations (pipeline/engine/steps.py); the corpus steps import the ground
    floor they share with it (pipeline/step.py, store.py, layout.py), never the engine, not even inside a
    function: the engine <-> corpus loop of issue 21 stays gone (the build's context reaches them as
    `pipeline.step.Context`)."""
    graph = import_graph()
    back = sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if _within(module, STEP_PACKAGES) and _within(target, ("pipeline.engine",)))
    assert not back, f"a step package imports the engine: {back}"
