"""Tiresias simulator job files (SymbioticLab/Tiresias `simulator/*_job.csv`, README: "necessary fields"):

    job_id,num_gpu,submit_time,iterations,model_name,duration,interval

Used: job_id, num_gpu (GPUs), submit_time (arrival, seconds), iterations (the work), model_name (-> model,
table below), duration (seconds; for `artist trace stats` GPU-hours only). Dropped: interval (the gap to
the next submission the generator drew; arrivals come from submit_time). The iterations are the trace's,
also when the model is a stand-in (the trace states work in steps, not time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.workload.traces.csvrows import cell, number
from artist.workload.traces.options import read_csv_table
from artist.workload.traces.record import LoadReport, TraceRecord

COLUMNS = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")
FIELDS_USED = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration")
FIELDS_DROPPED = ("interval",)

# The TensorFlow-benchmark CNNs of Tiresias' models.py: the same network where a profile exists, else the
# same family, else the profile nearest in parameter count (GoogLeNet ~6.6 M ~ MobileNetV3-Large 5.5 M).
MODEL_TABLE = {
    "alexnet": ("alexnet", "name match"), "vgg11": ("vgg11", "name match"), "resnet50": ("resnet50", "name match"),
    "vgg16": ("vgg11", "family (VGG)"), "vgg19": ("vgg11", "family (VGG)"),
    "resnet101": ("resnet50", "family (ResNet)"), "resnet152": ("resnet50", "family (ResNet)"),
    "inception3": ("resnet50", "stand-in (Inception-v3, 23.8 M parameters ~ ResNet-50's 25.6 M)"),
    "inception4": ("resnet50", "stand-in (Inception-v4)"),
    "googlenet": ("mobilenet_v3_large", "stand-in (GoogLeNet, 6.6 M parameters ~ 5.5 M)"),
}


def read_tiresias(path: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    return read_csv_table(Path(path), FIELDS_USED, "Tiresias job file", _record, report, skip_bad)


def _record(path: Path, lineno: int, row: dict) -> TraceRecord:
    where = f"line {lineno}"
    name = cell(row, "model_name", path, where)
    if name not in MODEL_TABLE:
        raise InputError(str(path), f"{where}, column 'model_name'",
                         f"unknown model {name!r}; known: {', '.join(sorted(MODEL_TABLE))}")
    return TraceRecord(
        job_id=cell(row, "job_id", path, where),
        submit=number(row, "submit_time", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
        gpus=int(number(row, "num_gpu", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
        where=where, model=name,
        iterations=int(number(row, "iterations", path, where, minimum=1, integer=True, maximum=MAX_ITERATIONS)),
        duration=number(row, "duration", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S))
