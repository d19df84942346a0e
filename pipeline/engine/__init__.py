"""One build engine for per-session steps and corpus steps.

    steps.py         the registry: every step's `Step` (pipeline/step.py), each declared beside its function
                     (session steps in session_steps.py; corpus steps in pipeline/annotate/ (the Label
                     Studio ones) and pipeline/corpus/ (agreement, adjudication, gold, freeze)); the engine's
                     only door to the step packages
    context.py       `StepContext`: the build's one context, which every step function receives
    state.py         what each step last did (build/state/), read and written; earlier layouts upgraded once
    plan.py          which steps a build runs (`--only` and what the named steps need), unknown names refused
    graph.py         the step graph as Mermaid text, generated from the declarations (docs/architecture.md)
    build.py         `rescue build`: one pass over the plan; session steps through an executor (runner.py,
                     session_run.py), then the corpus steps for the ready sessions (corpus_run.py)
    session_steps.py the per-session steps' declarations (their functions live in their families)
    freshness.py     whether each corpus step is up to date and why, computed without running anything
    waiting.py       which session waits for which step, and what it holds back
    status.py        the one status table: session steps per session, corpus steps, who waits for what

The state record (`pipeline.store.StepRun`), the build lock and the debris sweep (`pipeline.lock`), the step
record, its fingerprint rule and the context's surface (`pipeline.step`: `Step`, `Inputs`, `Context`) and the
paths (`pipeline.layout`) are the ground floor the engine shares with the steps, which never import the engine.
"""
