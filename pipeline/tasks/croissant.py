"""Croissant metadata of a release (`croissant.json`, JSON-LD; MLCommons Croissant 1.0 with its Responsible AI
extension): the dataset, every Parquet file with its sha256, one record set per task file (the same names as
the card's `configs:`), and the RAI fields. No time and no machine in it, so it is byte-identical on rebuild.

Record sets list a file's scalar columns (text, numbers, booleans); nested columns (lists, structs) are
described on the card and in the files themselves, and load with `datasets` or any Parquet reader."""

from __future__ import annotations

import json
import re
from typing import Any

from pipeline.tasks.instances import TASKS
from pipeline.tasks.registry import TASK_SPECS
from pipeline.tasks.release_card import CardSettings

FILE_NAME = "croissant.json"
CROISSANT = "http://mlcommons.org/croissant/1.0"
RAI = "http://mlcommons.org/croissant/RAI/1.0"
CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "citeAs": "cr:citeAs", "column": "cr:column",
    "equivalentProperty": "cr:equivalentProperty",
    "conformsTo": "dct:conformsTo", "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"}, "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract", "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated",
    "replace": "cr:replace", "samplingRate": "cr:samplingRate", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}
PARQUET = "application/x-parquet"
RELEASE_NUMBER = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$")
SCALAR_TYPES = {"String": "sc:Text", "Boolean": "sc:Boolean", "Float32": "sc:Float", "Float64": "sc:Float",
                **{f"{sign}Int{bits}": "sc:Integer" for sign in ("", "U") for bits in (8, 16, 32, 64)}}


def record_set_name(path: str) -> str:
    """The card's config name of a Parquet file: tasks/er.parquet -> er, gold/er.parquet -> er_gold."""
    folder, _, file = path.rpartition("/")
    stem = file.removesuffix(".parquet")
    return f"{stem}_gold" if folder == "gold" else stem


def semantic_version(version: str) -> str | None:
    """Croissant's `version` is MAJOR.MINOR.PATCH: v1 -> 1.0.0, v2.1 -> 2.1.0; None for other release names
    (the name and description still carry the release folder's name)."""
    match = RELEASE_NUMBER.match(version)
    return ".".join(part or "0" for part in match.groups()) if match else None


def _record_set(path: str, columns: list[tuple[str, str]]) -> dict[str, Any]:
    name = record_set_name(path)
    task = name.removesuffix("_gold")
    what = ("the gold sessions in the released row format" if task == "benchmark" else
            f"{task.upper()} ({TASK_SPECS[task].title}): " + ("answers (`gold`) and how each instance was made (`meta`)"
                                                       if name.endswith("_gold") else "what a model sees"))
    fields = [{"@type": "cr:Field", "@id": f"{name}/{column}", "name": column, "dataType": SCALAR_TYPES[dtype],
               "source": {"fileObject": {"@id": path}, "extract": {"column": column}}}
              for column, dtype in columns if dtype in SCALAR_TYPES]
    return {"@type": "cr:RecordSet", "@id": name, "name": name, "description": what, "field": fields}


def _annotation_analysis(card: CardSettings) -> str:
    summary = card.agreement
    if summary is None:
        return "Not available: the release was frozen without an agreement report (e.g. from a published gold file)."
    parts = [f"{f.field}: alpha {'n/a' if f.alpha is None else f'{f.alpha:.3f}'}" for f in summary.fields]
    return (f"Krippendorff's alpha per label field, {summary.annotators} annotators, "
            f"{summary.rows} rows, {summary.answers} answers ({summary.confidence:.0%} bootstrap intervals on the "
            f"card): " + ("; ".join(parts) or "no field annotated"))


def _rai(card: CardSettings, models: list[dict[str, str]], media: bool) -> dict[str, Any]:
    tools = [f"{m['role']}: {m['name']} {m['version']}".strip() for m in models] or ["none recorded"]
    annotators = card.agreement.annotators if card.agreement else None
    return {
        "rai:dataCollection": "Couple and family therapy interview recordings (source videos listed by the builder's "
                              "session catalog), transcribed and diarized automatically, speakers named by a person, "
                              "cut into one row per speaker turn.",
        "rai:dataCollectionType": ["Secondary Data Analysis", "Manual Human Curation"],
        "rai:dataPreprocessingProtocol": "Speech recognition (Whisper via WhisperX), speaker diarization "
                                         "(pyannote.audio), rows by the pipeline's rules; task files built from the "
                                         "gold rows by the task settings recorded in MANIFEST.json.",
        "rai:dataAnnotationProtocol": "Each row labelled independently by several annotators in Label Studio, from "
                                      "drafts they keep or change; consensus where they agree, an adjudicator "
                                      "where they do not.",
        "rai:dataAnnotationPlatform": "Label Studio (open source), one project per annotator",
        "rai:dataAnnotationAnalysis": _annotation_analysis(card),
        "rai:annotationsPerItem": (f"{annotators} annotator(s) in the agreement snapshot" if annotators
                                   else "several independent annotators per row (count not available)"),
        "rai:annotatorDemographics": "Not recorded by the pipeline.",
        "rai:machineAnnotationTools": tools,
        "rai:personalSensitiveInformation": "Therapy conversations: health, family life and relationships of "
                                            "identifiable people, their first names as shown on screen (not "
                                            "anonymised)" + (", and video clips of them under media/." if media
                                                              else "; no video, audio or subtitles."),
        "rai:dataBiases": "Filmed, broadcast sessions with few therapists, English only; family sessions far fewer "
                          "than couple sessions; labels are annotators' readings of emotions and viewpoints.",
        "rai:dataLimitations": "Automatic transcripts and speaker turns keep their errors where annotators did not "
                               "correct them; agreement varies by field; not a clinical assessment.",
        "rai:dataUseCases": "Evaluating models on relation-aware emotional support in multi-party therapy dialogue. "
                            "Not for judging, diagnosing or profiling real people, nor for unsupervised therapy.",
        "rai:dataSocialImpact": "Sensitive personal data about health and family life: consent was given to the "
                                "source videos' makers, not to this dataset; check the sources' terms and the law "
                                "before use, and remove a session on a participant's request.",
        "rai:dataReleaseMaintenancePlan": "Releases are frozen and never changed in place: a new gold gives a new "
                                          "release folder; replaced releases are kept by the builder.",
    }


def croissant_bytes(version: str, license: str, core: dict[str, Any], files: dict[str, dict[str, Any]],
                    columns: dict[str, list[tuple[str, str]]], card: CardSettings) -> bytes:
    """The JSON-LD for release `version`. `files`: manifest entries by path; `columns`: per Parquet file its
    top-level columns and their polars type names. No `datePublished`: a date would make rebuilds differ."""
    parquet = sorted(path for path in files if path.endswith(".parquet"))
    order = {name: n for n, name in enumerate([*TASKS, *(f"{t}_gold" for t in TASKS), "benchmark"])}
    parquet.sort(key=lambda path: order.get(record_set_name(path), len(order)))
    tasks = "; ".join(f"{t.upper()}: {task.prediction.described}" for t, task in TASK_SPECS.items())
    document: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": f"RESCUE-BENCH rebuild {version}",
        "description": "Six tasks on couple and family therapy sessions (emotion recognition, viewpoint, relation "
                       "pattern, intervention timing, support target and support strategy prediction), rebuilt "
                       "from annotated gold rows by the rescue pipeline. Prediction fields per task: " + tasks + ".",
        "conformsTo": [CROISSANT, RAI],
        "license": license,
        **({"version": number} if (number := semantic_version(version)) else {}),
        "inLanguage": "en",
        "keywords": ["therapy", "emotional support", "multi-party dialogue", "benchmark"],
        "citeAs": card.citation.strip() or f"RESCUE-BENCH (arXiv 2609.09657), rebuilt with the rescue pipeline "
                                           f"{core['code_version']}",
        "distribution": [{"@type": "cr:FileObject", "@id": path, "name": path, "contentUrl": path,
                          "encodingFormat": PARQUET, "sha256": files[path]["sha256"]} for path in parquet],
        "recordSet": [_record_set(path, columns.get(path, [])) for path in parquet],
        **_rai(card, core["provenance"]["models"], "media" in core),
    }
    return (json.dumps(document, indent=1, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")
