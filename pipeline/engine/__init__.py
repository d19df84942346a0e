"""One build engine for per-session steps and corpus steps.

    steps.py     every step declared once: scope, upstream steps, settings sections, sources, outputs
    plan.py      which steps a build runs (`--only` and what the named steps need), unknown names refused
    graph.py     the step graph as Mermaid text, generated from the declarations (docs/architecture.md)
    build.py     `rescue build`: session steps through an executor, then the corpus steps for the ready sessions
    waiting.py   which session waits for which step, and what it holds back
    status.py    the one status table: session steps per session, corpus steps, who waits for what
    printing.py  how a build and the status read on the console (the CLI stays thin)

State (one record, `pipeline.store.StepRun`), the build lock and the debris sweep (`pipeline.lock`) and the
paths (`pipeline.layout`) are shared with the steps themselves.
"""
