"""The step graph as Mermaid text, generated from the declarations (docs/architecture.md embeds it; a test
keeps the page equal to this output)."""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.engine.steps import LABEL_STUDIO, STEPS, Step


def _node(name: str) -> str:
    return name.replace("-", "_")


def mermaid(steps: Mapping[str, Step] = STEPS) -> str:
    """`steps`: a project's registry (`registry(catalog).steps`); the product's by default."""
    lines = ["flowchart TD"]
    for scope, title in (("session", "per session"), ("corpus", "whole corpus")):
        lines.append(f"  subgraph {scope}[{title}]")
        for step in steps.values():
            if step.scope == scope:
                shape = f"{_node(step.name)}([{step.name}])" if LABEL_STUDIO in step.needs else \
                    f"{_node(step.name)}[{step.name}]"
                lines.append(f"    {shape}")
        lines.append("  end")
    for step in steps.values():
        for upstream in step.after:
            lines.append(f"  {_node(upstream)} --> {_node(step.name)}")
    return "\n".join(lines) + "\n"
