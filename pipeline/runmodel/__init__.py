"""`rescue run-model`: run an OpenAI-compatible chat model on one task of a release in one input mode.

`settings` (what the user sets), `prompts` (the task instructions, the output format, PROMPT_VERSION),
`batches` (instances per request, grouped by sample, and the request each batch becomes, videos included),
`answers` (a model answer -> per-instance predictions or a reason why none), `run` (the whole run: requests
through pipeline/llm's client, the run folder build/runs/<run_id>/), `run_log` and `log_records` (the run's
per-request and per-instance log, written as the run goes), `show` and `show_html` (reading it back for
`rescue show-run`). The output is scored by `rescue evaluate`.
"""
