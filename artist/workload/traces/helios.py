"""SenseTime Helios `cluster_log.csv` (S-Lab-System-Group/HeliosData README, "Schema and Description"):

    job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue

Used: job_id, user, vc, gpu_num (0 = a CPU-only job), state (COMPLETED, CANCELLED, FAILED, TIMEOUT,
NODE_FAIL), submit_time (arrival), duration (seconds, end_time - start_time, the job's run time).
Dropped: cpu_num, node_num (the simulator places GPUs itself), start_time, end_time and queue (the
original cluster's schedule, which the simulation replaces).

Two entry points: `read_helios_csv`, the reader from before trace formats had options (a plain path to a
cluster_log.csv given as --workload: models drawn uniformly with the seed, CPU jobs skipped, results
unchanged), and `read_helios`, the TraceRecord reader behind `helios:path=...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS
from artist.workload.job import Job
from artist.workload.model import ModelProfile
from artist.workload.traces.csvrows import CsvRows, cell, number, timestamp
from artist.workload.traces.options import read_csv_table
from artist.workload.traces.record import LoadReport, TraceRecord

HELIOS_COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
                  "submit_time", "start_time", "end_time", "duration", "queue")
FIELDS_USED = ("job_id", "user", "vc", "gpu_num", "state", "submit_time", "duration")
FIELDS_DROPPED = ("cpu_num", "node_num", "start_time", "end_time", "queue")


def read_helios(path: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    return read_csv_table(Path(path), FIELDS_USED, "Helios", slurm_record, report, skip_bad)


def slurm_record(path: Path, lineno: int, row: dict) -> TraceRecord:
    """A row of a Slurm-style job log (Helios, Acme): gpu_num, state, submit_time, duration."""
    where = f"line {lineno}"
    return TraceRecord(
        job_id=cell(row, "job_id", path, where),
        submit=timestamp(row, "submit_time", path, where),
        gpus=int(number(row, "gpu_num", path, where, minimum=0, integer=True, maximum=MAX_GPUS)),
        where=where,
        duration=number(row, "duration", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
        state=(row.get("state") or "").strip(),
        user=(row.get("user") or "").strip(),
        vc=(row.get("vc") or "").strip(),
    )


def read_helios_csv(path: str | Path, model_names: Sequence[str], seed: int,
                    models: dict[str, ModelProfile] | None = None, include_cpu_jobs: bool = False) -> list[Job]:
    """Helios / SenseTime ``cluster_log.csv`` rows mapped to jobs.

    Arrival = submit_time relative to the first kept job. The trace has no
    model names, so each job gets one drawn with ``seed``. Iterations are set so
    that the job alone, communication ignored, runs for its logged ``duration``
    (at least one iteration); this needs ``models`` for compute times. Jobs
    with gpu_num 0 (CPU jobs) are skipped unless asked for."""
    path = Path(path)
    rng = np.random.default_rng(seed)
    model_names = list(model_names)
    if not model_names:
        raise ValueError("read_helios_csv needs at least one model name to assign")
    rows = []
    with CsvRows(path) as table:
        missing = [c for c in HELIOS_COLUMNS if c not in table.header]
        if missing:
            raise InputError(str(path), "line 1", f"missing Helios column(s) {', '.join(missing)}")
        for lineno, row in table.rows():
            where = f"line {lineno}"
            gpus = int(number(row, "gpu_num", path, where, minimum=0, integer=True, maximum=MAX_GPUS))
            submit = timestamp(row, "submit_time", path, where)
            duration = number(row, "duration", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S)
            if gpus == 0 and not include_cpu_jobs:
                continue
            rows.append((submit, cell(row, "job_id", path, where), gpus, duration,
                         (row.get("user") or "").strip(), (row.get("vc") or "").strip(), lineno))
    if not rows:
        return []
    first_line: dict[str, int] = {}
    for row in rows:
        if row[1] in first_line:
            raise InputError(str(path), f"line {row[6]}", f"job_id {row[1]!r} appears twice (first on line "
                                                          f"{first_line[row[1]]})")
        first_line[row[1]] = row[6]
    rows.sort(key=lambda r: (r[0], r[1]))
    t0 = rows[0][0]
    jobs = []
    for submit, job_id, gpus, duration, user, vc, lineno in rows:
        if submit - t0 > MAX_ARRIVAL_S:
            raise InputError(str(path), f"line {lineno}, column 'submit_time'",
                             f"{submit - t0:g} s after the first job; at most {MAX_ARRIVAL_S:g} s (artist.limits)")
        model = model_names[int(rng.integers(len(model_names)))]
        if models is not None:
            iterations = max(1, int(round(duration / models[model].compute_seconds)))
        else:
            iterations = max(1, int(round(duration)))
        jobs.append(Job(job_id, submit - t0, model, max(gpus, 1), iterations, user, vc))
    return jobs
