"""Inter-annotator agreement and adjudication: pulled annotations -> agreement reports -> gold rows.

Modules, in data-flow order: `inputs` (the newest annotation snapshot), `plan` (what to measure, from
the schema), `ratings` (annotations -> coded ratings per measure), `distances` + `metrics` +
`bootstrap` (the coefficients), `textsim` (free text), `breakdowns` (per field, scenario, session,
annotator, pair), `report_*` + `figures` (HTML/CSV/Markdown), `consensus` + `queue` + `gold`
(adjudication and gold rows); its commands live in pipeline/cli/agreement.py. Nothing here is imported by
`rescue --help`.
"""
