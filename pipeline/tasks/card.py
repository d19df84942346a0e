"""The release's dataset card (README.md): YAML front matter with one `configs:` entry per task, so the
Hugging Face `datasets` loader reads each task's Parquet file, then the numbers, the prediction format, the
annotation process and its agreement, the construction choices, sensitive data and limitations, how to cite
and the licence (the sections for a stranger: pipeline/tasks/card_sections.py)."""

from __future__ import annotations

from typing import Any

import yaml

from pipeline.tasks.card_sections import annotation_section, citation_section, prediction_section, sensitive_section
from pipeline.tasks.instances import TASKS
from pipeline.tasks.modes import AUDIO_FIELDS, MODES, VIDEO_MODE, VISUAL_FIELDS
from pipeline.tasks.registry import TASK_SPECS
from pipeline.tasks.release_card import CardSettings
from pipeline.tasks.stats import instances_markdown, table3_markdown

MODE_SHOWS = {
    "dialogue": "the dialogue text, no cue fields",
    "audio": "the dialogue text and the audio cue " + ", ".join(f"`{f}`" for f in AUDIO_FIELDS),
    "visual": "the dialogue text and the visual cues " + ", ".join(f"`{f}`" for f in VISUAL_FIELDS),
    "audiovisual": "the dialogue text and every cue field",
    VIDEO_MODE: "the dialogue text and the rows' own clips (video with sound) in place of the cue fields",
}


def media_section(media: dict[str, Any] | None) -> str:
    """The card's input modes and media folder; empty for a text-only release, whose card stays as it was."""
    if media is None:
        return ""
    rows = "\n".join(f"| `{mode}` | {MODE_SHOWS[mode]} | "
                     f"{', '.join(t.upper() for t in TASKS if mode in TASK_SPECS[t].modes)} |" for mode in MODES)
    return f"""## Input modes and media

A model sees each task in one of five input modes (the paper's; `rescue run-model --mode`). The task files
carry every cue; a mode leaves out what it does not show.

| mode | the model sees | tasks |
|---|---|---|
{rows}

This release holds the clips of `{VIDEO_MODE}`: `{media['folder']}` ({media['clips']} MP4 clips: H.264 video
where the session has video, AAC sound; one per row that some instance attaches), at
`media/<sample_id>/<NNN>.mp4` (NNN = the row index). In `tasks/er`, `tasks/vp` and `tasks/ssp`, each row
record with a clip carries `clip_path` (relative to this folder), `clip_duration_sec` and
`video_attachment_index` (its 1-based position among the instance's videos), and each instance carries
`video_attachments`, the clip paths in the order the paper's scripts attach them: ER and VP the prior
context's clips, then the current row's own clip (the instance is that row); SSP the prior context's clips
only (its own row would show the answer). An SSP instance whose context is empty has an empty list and takes
no part in `{VIDEO_MODE}`. MANIFEST.json lists every clip's sha256: `rescue verify` names a missing or
changed clip.

With `datasets`, the media keys load as path strings (relative to this folder). To decode the videos, join
each path to the folder and cast the column to `datasets.Video()`, which needs the `torchcodec` package.

"""


def front_matter(version: str, license: str = "other") -> dict[str, Any]:
    configs = []
    for task in TASKS:
        configs.append({"config_name": task, "data_files": [{"split": "test", "path": f"tasks/{task}.parquet"}]})
    for task in TASKS:
        configs.append({"config_name": f"{task}_gold",
                        "data_files": [{"split": "test", "path": f"gold/{task}.parquet"}]})
    configs.append({"config_name": "benchmark", "data_files": [{"split": "test", "path": "benchmark.parquet"}]})
    return {
        "pretty_name": f"RESCUE-BENCH rebuild ({version})",
        "language": ["en"],
        "license": license,
        "task_categories": ["text-classification", "text-generation"],
        "tags": ["therapy", "emotional-support", "multi-party-dialogue", "benchmark"],
        "configs": configs,
    }


def dataset_card(version: str, stats: dict[str, Any], manifest_core: dict[str, Any],
                 card: CardSettings = CardSettings()) -> str:
    license = manifest_core["license"]
    header = yaml.safe_dump(front_matter(version, license), sort_keys=False, allow_unicode=True, width=1000)
    settings = manifest_core["task_settings"]
    task_rows = "\n".join(
        f"| `{t.name}` | {t.title} | `tasks/{t.name}.jsonl` | `gold/{t.name}.jsonl`: {t.gold_fields} | "
        f"{t.scoring.described} |" for t in TASK_SPECS.values())
    provenance = manifest_core["provenance"]
    models = ("\n".join(f"- Model ({m['role']}): {m['name']} {m['version']}" for m in provenance["models"])
              or "- Models: (none recorded)")
    json_columns = "; ".join(f"`{path}`: {', '.join(f'`{c}`' for c in columns)}"
                             for path, columns in manifest_core["parquet_json_columns"].items()) or "none"
    snapshots = ", ".join(provenance["annotation_snapshots"]) or "(none recorded)"
    return f"""---
{header}---

# RESCUE-BENCH rebuild, release {version}

Six tasks on couple and family therapy sessions, rebuilt from annotated gold rows by the `rescue`
pipeline: ER (emotion recognition), VP (viewpoint prediction), RPP (relation pattern prediction),
ITP (intervention timing), STP (support target) and SSP (support strategy).

## Files

| config | task | model-facing file | gold file and fields | metrics (`rescue evaluate`) |
|---|---|---|---|---|
{task_rows}

- `tasks/<task>.jsonl` holds only what a model may see: `id`, `task`, `sample_id`, `scenario` and the
  task's inputs. `gold/<task>.jsonl` holds the same `id` with `gold` and `meta` (how the instance was
  made, e.g. ITP's candidate type). Give models the task files only.
- `tasks/<task>.parquet`, `gold/<task>.parquet`: the same records in the same order as Parquet (the
  `configs:` above point at them); nested fields are Parquet lists and structs. A key that some records
  lack reads back as null there, and whole numbers in a float column as floats; otherwise every record
  equals its JSONL line. Columns whose values mix types are stored as JSON text instead: {json_columns}.
- `benchmark.jsonl`: the gold sessions, one per line, in the released row format (`benchmark.parquet`:
  the same as Parquet, config `benchmark`).
- `MANIFEST.json`: sha256 and row count of every file, schema version, task-construction settings,
  code version, annotation snapshot ids, model names and versions. Check a copy with `rescue verify <folder>`.
- `croissant.json`: the same release as [Croissant](https://mlcommons.org/croissant/) 1.0 metadata (JSON-LD):
  the Parquet files with their sha256, one record set per config above (scalar columns), and the
  Responsible AI fields (collection, annotation, sensitive data, limitations, intended use).
- `stats/`: the statistics table below (`table3.md/.csv`), instance counts (`instances.md/.csv`) and
  everything as `statistics.json`. `figures/`: relation-pattern transitions and label distributions.

Load one task with the `datasets` library: `load_dataset("<this folder>", "itp", split="test")`
(`"itp_gold"` for its answers), or read the Parquet files with any dataframe library.

{prediction_section()}{media_section(manifest_core.get("media"))}## Statistics (as the paper's Table 3)

{table3_markdown(stats["table3"])}
Durations run to the end of each session's last row (the row format has no duration field); n/a: no
session of that scenario in this release.

## Instances per task and scenario

{instances_markdown(stats["instances"])}
{annotation_section(card)}## How the tasks were built

Settings `{settings['name']}-v{settings['version']}` (all values in `MANIFEST.json`); label sets from
the annotation schema `{manifest_core['schema']['id']}`. Context: ER {settings['er']['context_size']},
VP {settings['vp']['context_size']}, RPP {settings['rpp']['context_size']}, ITP {settings['itp']['context_size']},
STP {settings['stp']['context_size']}, SSP {settings['ssp']['context_size']} rows (-1 = every earlier row).
RPP uses `{settings['rpp']['rows']}` rows, each row's label read from the first of
`{', '.join(settings['rpp']['label_fields'])}` that is non-empty on that row (per sample, how many
instances each field gave: `MANIFEST.json` `coverage.rpp_label_rows`); STP uses `{settings['stp']['rows']}` rows; multi-person targets:
`{settings['stp']['multi_target']}`. The choices between the paper and the released code are explained in
the pipeline's `docs/tasks.md`.

Instances of one session share context: a later instance's context shows rows that decide an earlier
instance's answer (e.g. who spoke after an ITP decision row). Present each instance on its own, not all
instances of a session in one prompt.

{sensitive_section("media" in manifest_core)}## Provenance

- Code version: {manifest_core['code_version']}
- Annotation snapshots: {snapshots}
{models}

{citation_section(card, manifest_core["code_version"])}
## Licence

The rows, task files and statistics are derived from the source videos (their speech, on-screen
behaviour and timing). Their licence is the source videos' licence, which the makers of this pipeline
do not own and cannot change: check the terms of each source before you use or share this release.
The `license:` field above is `{license}`, as set when the release was frozen (`rescue freeze --license`,
or `release_license` in `[tool.rescue.build]`; a public release, `release_public = true`, must name a
specific licence). Raw video, audio and subtitles are not part of it.
"""
