"""`pipeline/layout.py` is the only module that spells a path under build/ (read from the source with `ast`,
nothing imported): no `<project>.build / "name"`, no `build_dir / "name"`, no `session_dir("area", ...)` and no
"build/..." path constant anywhere else. A module asks layout for the folder and adds only its own file names."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"
NOT_A_FOLDER = {"executors/ray_shared.py"}  # a throwaway marker at the build root, named per check


def _is_build(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "build") or (
        isinstance(node, ast.Name) and node.id in ("build", "build_dir"))


def _text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def spelled_build_paths(source: str) -> list[int]:
    """Line numbers of the build paths a module spells by hand."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _is_build(node.left) and _text(node.right):
            found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "session_dir"
              and node.args and _text(node.args[0])):
            found.append(node.lineno)
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, str) and node.value.value.startswith("build/")):
            found.append(node.lineno)
    return sorted(found)


def test_the_checker_sees_each_way_of_spelling_a_build_path() -> None:
    source = ('a = project.build / "gold"\nb = ctx.project.build / f"{x}.json"\nc = build_dir / "media"\n'
              'd = project.session_dir("transcripts", sid)\nE = "build/labelstudio"\n'
              'ok = layout.gold_dir(project) / "summary.json"\nalso_ok = project.build / NAME\n')
    assert spelled_build_paths(source) == [1, 2, 3, 4, 5]


def test_only_layout_spells_build_paths() -> None:
    spelled = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name == "layout.py" or name in NOT_A_FOLDER:
            continue
        lines = spelled_build_paths(path.read_text(encoding="utf-8"))
        if lines:
            spelled[name] = lines
    assert spelled == {}, f"ask pipeline/layout.py for these folders instead: {spelled}"
