"""The release's dataset card (README.md): YAML front matter with one `configs:` entry per task, so the
Hugging Face `datasets` loader reads each task file, then the numbers and the construction choices."""

from __future__ import annotations

from typing import Any

import yaml

from pipeline.tasks.instances import TASK_TITLES, TASKS
from pipeline.tasks.stats import instances_markdown, table3_markdown

GOLD_FIELDS = {
    "er": "`gold.internal_emotion` (text), `gold.intensity` (0-10)",
    "vp": "`gold.viewpoints` (list of source, target, viewpoint, attitude)",
    "rpp": "`gold.relation_label` (one of `candidate_relation_labels`)",
    "itp": "`gold.should_speak` (`yes` / `no`)",
    "stp": "`gold.target_label` (one of `candidate_target_labels`)",
    "ssp": "`gold.strategy_label` (one of `candidate_strategy_labels`)",
}
METRICS = {
    "er": "intensity score max(1, 5 - abs(pred - gold)); MiniLM cosine similarity of the emotion text",
    "vp": "MiniLM similarity of each gold viewpoint to its best prediction; source-target recall",
    "rpp": "accuracy (= recall@1), recall@2/3, MRR, macro-F1 of the top label",
    "itp": "precision, recall, F1 of `yes`; accuracy; balanced accuracy",
    "stp": "recall@1/2/3, MRR over the top 3",
    "ssp": "recall@1/2/3, MRR over the top 3",
}


def front_matter(version: str) -> dict[str, Any]:
    configs = []
    for task in TASKS:
        configs.append({"config_name": task, "data_files": [{"split": "test", "path": f"tasks/{task}.jsonl"}]})
    for task in TASKS:
        configs.append({"config_name": f"{task}_gold", "data_files": [{"split": "test", "path": f"gold/{task}.jsonl"}]})
    configs.append({"config_name": "benchmark", "data_files": [{"split": "test", "path": "benchmark.jsonl"}]})
    return {
        "pretty_name": f"RESCUE-BENCH rebuild ({version})",
        "language": ["en"],
        "license": "other",
        "task_categories": ["text-classification", "text-generation"],
        "tags": ["therapy", "emotional-support", "multi-party-dialogue", "benchmark"],
        "configs": configs,
    }


def dataset_card(version: str, stats: dict[str, Any], manifest_core: dict[str, Any]) -> str:
    header = yaml.safe_dump(front_matter(version), sort_keys=False, allow_unicode=True, width=1000)
    settings = manifest_core["task_settings"]
    task_rows = "\n".join(
        f"| `{t}` | {TASK_TITLES[t]} | `tasks/{t}.jsonl` | `gold/{t}.jsonl`: {GOLD_FIELDS[t]} | {METRICS[t]} |"
        for t in TASKS)
    provenance = manifest_core["provenance"]
    models = ("\n".join(f"- Model ({m['role']}): {m['name']} {m['version']}" for m in provenance["models"])
              or "- Models: (none recorded)")
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
- `benchmark.jsonl`: the gold sessions, one per line, in the released row format.
- `MANIFEST.json`: sha256 and row count of every file, schema version, task-construction settings,
  code version, annotation snapshot ids, model names and versions. Check a copy with `rescue verify <folder>`.
- `stats/`: the statistics table below (`table3.md/.csv`), instance counts (`instances.md/.csv`) and
  everything as `statistics.json`. `figures/`: relation-pattern transitions and label distributions.

Load one task with the `datasets` library: `load_dataset("<this folder>", "itp", split="test")`.

## Statistics (as the paper's Table 3)

{table3_markdown(stats["table3"])}
Durations run to the end of each session's last row (the row format has no duration field).

## Instances per task and scenario

{instances_markdown(stats["instances"])}
## How the tasks were built

Settings `{settings['name']}-v{settings['version']}` (all values in `MANIFEST.json`); label sets from
the annotation schema `{manifest_core['schema']['id']}`. Context: ER {settings['er']['context_size']},
VP {settings['vp']['context_size']}, RPP {settings['rpp']['context_size']}, ITP {settings['itp']['context_size']},
STP {settings['stp']['context_size']}, SSP {settings['ssp']['context_size']} rows (-1 = every earlier row).
RPP uses `{settings['rpp']['rows']}` rows, its label read per sample from the first of
`{', '.join(settings['rpp']['label_fields'])}` that the sample sets (which one per sample:
`MANIFEST.json` `coverage`); STP uses `{settings['stp']['rows']}` rows; multi-person targets:
`{settings['stp']['multi_target']}`. The choices between the paper and the released code are explained in
the pipeline's `docs/tasks.md`.

Instances of one session share context: a later instance's context shows rows that decide an earlier
instance's answer (e.g. who spoke after an ITP decision row). Present each instance on its own, not all
instances of a session in one prompt.

## Provenance

- Code version: {manifest_core['code_version']}
- Annotation snapshots: {snapshots}
{models}
"""
