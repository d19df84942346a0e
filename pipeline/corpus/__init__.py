"""Corpus-level steps of `rescue build`, after the per-session stages: Label Studio (push, stored sample
annotations, pull), agreement, adjudication and gold, and the frozen release. Make-like: each step is
skipped when the fingerprint of its inputs equals its last successful run (build/state/corpus/<step>.json)."""
