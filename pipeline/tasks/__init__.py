"""Task construction (ER, VP, RPP, ITP, STP, SSP), the frozen release, verification and evaluation.

Entry points: `release.freeze_release`, `verify.verify_release`, `evaluate.evaluate`, `settings.load_task_settings`,
`gold_input.read_gold_file`; CLI in pipeline/cli/tasks.py. See docs/tasks.md.
Kept import-free so `rescue --help` stays fast.
"""
