"""Gavel trace files (stanford-futuredata/gavel `scheduler/traces/**/*.trace`): headerless, tab-separated,
one job per line, in one of the three layouts Gavel's parse_trace has read over its history (told apart
by the number of fields):

    10: job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor,
        priority_weight, SLO, arrival_time                                  (scheduler/utils.py, master)
     9: job_type, command, num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO,
        arrival_time                                                        (earlier utils.py)
     7: job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor
                                                                            (traces/msr/seed=*/*.trace)

Used: job_type ('ResNet-50 (batch size 128)': the model, table below, and the batch size), total_steps
(iterations), scale_factor (GPUs), arrival_time (seconds). Dropped: command, working_directory,
num_steps_arg, needs_data_dir (how Gavel launches the job), priority_weight and SLO (ArtISt's policies
take none). Job ids are `gavel-<line>` (the files have none).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Iterator

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.workload.traces.csvrows import CsvRows, cell, number
from artist.workload.traces.options import bad_row_handler, guarded
from artist.workload.traces.record import LoadReport, TraceRecord

LAYOUTS = {
    10: ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir", "total_steps",
         "scale_factor", "priority_weight", "SLO", "arrival_time"),
    9: ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "scale_factor", "priority_weight",
        "SLO", "arrival_time"),
    7: ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor"),
}
FIELDS_USED = ("job_type", "total_steps", "scale_factor", "arrival_time")
FIELDS_DROPPED = ("command", "working_directory", "num_steps_arg", "needs_data_dir", "priority_weight", "SLO")

# Gavel's job types (scheduler/job_table.py): the same network where a profile exists, else a stand-in.
MODEL_TABLE = {
    "ResNet-18": ("resnet18", "name match (CIFAR-10 ResNet-18)"),
    "ResNet-50": ("resnet50", "name match (ImageNet ResNet-50)"),
    "Transformer": ("bert_large", "stand-in (Transformer translation model; a transformer profile)"),
    "LM": ("alexnet", "stand-in (LSTM language model on WikiText-2)"),
    "Recommendation": ("mobilenet_v3_large", "stand-in (autoencoder recommender on ML-20M; a small profile)"),
    "CycleGAN": ("resnet18", "stand-in (CycleGAN, ResNet generators)"),
    "A3C": ("mobilenet_v3_large", "stand-in (A3C reinforcement learning; a small profile)"),
}
JOB_TYPE = re.compile(r"^(?P<name>.*?)(?: \(batch size (?P<batch>\d+)\))?(?: \(scale factor \d+\))?$")


def gavel_layout(path: Path) -> tuple[str, ...] | None:
    """The layout of the file's first non-empty line, None when it matches none."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    return LAYOUTS.get(len(line.rstrip("\r\n").split("\t")))
                    # only the first line is read
    except OSError:
        return None
    return None


def read_gavel(path: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    path = Path(path)
    layout = gavel_layout(path)
    if layout is None:
        raise InputError(str(path), "line 1", f"not a Gavel trace: expected {', '.join(map(str, sorted(LAYOUTS)))} "
                                              f"tab-separated fields per line")
    with CsvRows(path, layout, delimiter="\t", quoting=csv.QUOTE_NONE) as table:
        yield from guarded(table.rows(bad_row_handler(report, skip_bad)),
                           lambda lineno, row: _record(path, lineno, row), report, skip_bad)


def _record(path: Path, lineno: int, row: dict) -> TraceRecord:
    where = f"line {lineno}"
    job_type = cell(row, "job_type", path, where)
    match = JOB_TYPE.match(job_type)
    name = match.group("name")
    if name not in MODEL_TABLE:
        raise InputError(str(path), f"{where}, column 'job_type'",
                         f"unknown job type {name!r}; known: {', '.join(sorted(MODEL_TABLE))}")
    return TraceRecord(
        job_id=f"gavel-{lineno}",
        submit=number(row, "arrival_time", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
        gpus=int(number(row, "scale_factor", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
        where=where, model=name,
        iterations=int(number(row, "total_steps", path, where, minimum=1, integer=True, maximum=MAX_ITERATIONS)),
        batch_size=int(match.group("batch") or 0))
