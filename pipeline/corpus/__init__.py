"""Corpus-level steps of `rescue build` after the annotations are pulled: agreement, adjudication and gold, and
the frozen release (the Label Studio steps are in pipeline/annotate/). Make-like: each step is skipped when
the fingerprint of its inputs equals its last successful run (build/state/corpus/<step>.json). Each step
function receives the build's one context (`pipeline.step.Context`) and never imports the engine."""
