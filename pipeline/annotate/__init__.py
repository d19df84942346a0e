"""Annotation in Label Studio: schema -> label config, the embedded server, push of rows, pull of labels.

Modules: `config` (the label config generated from the declarative schema), `tasks` (rows -> tasks
with pre-filled drafts), `results` (field values <-> Label Studio results, and their validation),
`labelstudio` (the only module importing label_studio_sdk), `server` (the embedded server),
`accounts` (annotator accounts), `projects` (one project per scenario and annotator: independent
labels), `push`, `pull` (with `parse` and `merge`); the commands live in pipeline/cli/annotate.py.
Importing this package is cheap: nothing heavy is imported until a function needs it.
"""
