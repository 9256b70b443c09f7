"""Crius / Arena simulator traces (sjtu-epcc/arena branch ae-eurosys, `traces/simulate_trace_*.csv`):

    job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,gpu_type

Used: job_id, submission_time (arrival, seconds), num_iteration (the work), model_name ('family__size',
e.g. bert__760M, moe__10B, wide_resnet__2B; -> model by family, table below), batch_size (global),
num_gpu, gpu_type (kept on the record; `artist trace stats` counts it). Dropped: deadline (ArtISt jobs
have none yet). The sizes (0.5-27 B parameters) are far above every shipped profile: the family's profile
stands in, with the trace's iterations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.workload.traces.csvrows import cell, number
from artist.workload.traces.options import read_csv_table
from artist.workload.traces.record import LoadReport, TraceRecord

COLUMNS = ("job_id", "submission_time", "num_iteration", "model_name", "deadline", "batch_size", "num_gpu",
           "gpu_type")
FIELDS_USED = ("job_id", "submission_time", "num_iteration", "model_name", "batch_size", "num_gpu", "gpu_type")
FIELDS_DROPPED = ("deadline",)

# Crius Table 2 families (the Alpa models): Wide-ResNet, BERT, GShard MoE.
MODEL_TABLE = {
    "bert": ("bert_large", "family (BERT; 0.76-6.7 B parameters in Crius, 0.34 B profiled)"),
    "wide_resnet": ("resnet50", "family (ResNet; Wide-ResNet 0.5-6.8 B parameters in Crius)"),
    "moe": ("bert_large", "stand-in (GShard MoE transformer; no MoE profile, no all-to-all modelled)"),
}


def read_crius(path: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    return read_csv_table(Path(path), FIELDS_USED, "Crius trace", _record, report, skip_bad)


def model_family(name: str) -> str:
    return name.split("__", 1)[0]


def _record(path: Path, lineno: int, row: dict) -> TraceRecord:
    where = f"line {lineno}"
    name = cell(row, "model_name", path, where)
    if model_family(name) not in MODEL_TABLE:
        raise InputError(str(path), f"{where}, column 'model_name'",
                         f"unknown model family {model_family(name)!r} (of {name!r}); known: "
                         f"{', '.join(sorted(MODEL_TABLE))}")
    return TraceRecord(
        job_id=cell(row, "job_id", path, where),
        submit=number(row, "submission_time", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
        gpus=int(number(row, "num_gpu", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
        where=where, model=model_family(name),
        iterations=int(number(row, "num_iteration", path, where, minimum=1, integer=True, maximum=MAX_ITERATIONS)),
        batch_size=int(number(row, "batch_size", path, where, minimum=1, integer=True, maximum=MAX_ITERATIONS)),
        gpu_type=cell(row, "gpu_type", path, where))
