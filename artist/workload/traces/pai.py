"""Alibaba PAI GPU trace 2020 (alibaba/clusterdata cluster-trace-gpu-v2020, README "pai_job_table" and
"pai_task_table"), given as the directory holding the tables as published: headerless CSVs
`pai_job_table.csv` and `pai_task_table.csv`, their column names in `pai_job_table.header` and
`pai_task_table.header` when those are present (else the published order below).

    pai_job_table:  job_name,inst_id,user,status,start_time,end_time
    pai_task_table: job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type

A job is its job_name (the tables' join key; inst_id is 1:1 with it). Used: job.user, job.status
(Terminated = completed, Failed, Running/Waiting = unfinished), job.start_time (the job's submission: its
arrival), job.end_time; per task inst_num x plan_gpu (plan_gpu is in percent of one GPU: 50.0 is half a
GPU; empty for CPU tasks) summed over the job's tasks and rounded up to whole GPUs (a job asking for a
fraction of a GPU in total gets 1, counted in the report); gpu_type of the task asking for the most GPU;
run time = job end_time - the earliest task start_time (the wait before it is the original queue).
Dropped: inst_id, task_name, task status and end_time, plan_cpu, plan_mem, and the other tables (instances,
sensors, machines: the simulator does its own placement). Times are seconds from a shifted origin.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS
from artist.workload.traces.csvrows import CsvRows, cell, checked_number, number
from artist.workload.traces.options import bad_row_handler, count_bad, guarded
from artist.workload.traces.record import LoadReport, TraceRecord

JOB_TABLE, TASK_TABLE = "pai_job_table", "pai_task_table"
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
                "plan_gpu", "gpu_type")
JOB_FIELDS_USED = ("job_name", "user", "status", "start_time", "end_time")
TASK_FIELDS_USED = ("job_name", "inst_num", "start_time", "plan_gpu", "gpu_type")
FIELDS_USED = tuple(f"{JOB_TABLE}.{c}" for c in JOB_FIELDS_USED) + tuple(f"{TASK_TABLE}.{c}" for c in
                                                                          TASK_FIELDS_USED)
FIELDS_DROPPED = (f"{JOB_TABLE}.inst_id", f"{TASK_TABLE}.task_name", f"{TASK_TABLE}.status",
                  f"{TASK_TABLE}.end_time", f"{TASK_TABLE}.plan_cpu", f"{TASK_TABLE}.plan_mem")
MAX_INSTANCES = 1_000_000  # bound on inst_num (our ceiling, far above any one task; not a figure of the trace)


def is_pai_directory(path: Path) -> bool:
    return path.is_dir() and (path / f"{JOB_TABLE}.csv").is_file()


def read_pai(directory: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    directory = Path(directory)
    for table in (JOB_TABLE, TASK_TABLE):
        if not (directory / f"{table}.csv").is_file():
            raise InputError(str(directory), None, f"no {table}.csv: expected the directory holding the PAI "
                                                   f"2020 tables (pai_job_table.csv, pai_task_table.csv)")
    job_columns = _columns(directory, JOB_TABLE, JOB_COLUMNS, JOB_FIELDS_USED)  # both checked before any row
    task_columns = _columns(directory, TASK_TABLE, TASK_COLUMNS, TASK_FIELDS_USED)
    tasks = _task_totals(directory, task_columns, report, skip_bad)
    fractional = 0
    path = directory / f"{JOB_TABLE}.csv"
    with CsvRows(path, job_columns) as table:
        def record(lineno, row):
            nonlocal fractional
            if lineno == 1 and row.get("job_name") == "job_name":
                report.rows -= 1  # a header row some copies carry
                return None
            where = f"line {lineno}"
            job_name = cell(row, "job_name", path, where)
            total = tasks.pop(job_name, None)
            if total is None:
                report.drop("no rows in pai_task_table (no GPU request)")
                return None
            percent, gpu_type, task_start = total
            submit = number(row, "start_time", path, where, minimum=0.0)
            end_text = (row.get("end_time") or "").strip()
            duration = None
            if end_text:
                end = checked_number(end_text, path, f"{where}, column 'end_time'", minimum=0.0)
                begin = task_start if task_start is not None else submit
                duration = end - begin
                if not 0 <= duration <= MAX_ARRIVAL_S:
                    raise InputError(str(path), f"{where}, column 'end_time'",
                                     f"run time {duration:g} s (end - first task start) must be in "
                                     f"[0, {MAX_ARRIVAL_S:g}]")
            gpus = math.ceil(percent / 100.0 - 1e-9) if percent > 0 else 0
            if 0 < percent < 100:
                fractional += 1
            if gpus > MAX_GPUS:
                raise InputError(str(path), where, f"{gpus} GPUs over the job's tasks; at most {MAX_GPUS}")
            return TraceRecord(job_id=job_name, submit=submit, gpus=gpus, where=f"{JOB_TABLE}.csv {where}",
                               duration=duration, gpu_type=gpu_type, state=(row.get("status") or "").strip(),
                               user=(row.get("user") or "").strip())

        yield from guarded(table.rows(bad_row_handler(report, skip_bad)), record, report, skip_bad)
    if fractional:
        report.note(f"{fractional} job(s) asked for a fraction of one GPU in total (plan_gpu < 100 %); each "
                    f"is given 1 GPU")
    if tasks:
        report.note(f"{len(tasks)} job_name(s) of pai_task_table are not in pai_job_table; ignored")


def _task_totals(directory: Path, columns: list[str], report: LoadReport, skip_bad: bool) -> dict[str, list]:
    """job_name -> [GPU percent over its tasks, gpu_type of its largest GPU task, earliest task start]."""
    path = directory / f"{TASK_TABLE}.csv"
    totals: dict[str, list] = {}
    with CsvRows(path, columns) as table:
        for lineno, row in table.rows(None if not skip_bad else (lambda exc: count_bad(report, exc))):
            if lineno == 1 and row.get("job_name") == "job_name":
                continue
            where = f"line {lineno}"
            try:
                job_name = cell(row, "job_name", path, where)
                instances = number(row, "inst_num", path, where, minimum=0, integer=True, maximum=MAX_INSTANCES)
                plan_text = (row.get("plan_gpu") or "").strip()
                plan = checked_number(plan_text, path, f"{where}, column 'plan_gpu'", minimum=0.0,
                                      maximum=100.0 * MAX_GPUS) if plan_text else 0.0
                start_text = (row.get("start_time") or "").strip()
                start = checked_number(start_text, path, f"{where}, column 'start_time'",
                                       minimum=0.0) if start_text else None
            except InputError as exc:
                if not skip_bad:
                    raise
                count_bad(report, exc)
                continue
            percent = instances * plan
            entry = totals.setdefault(job_name, [0.0, "", None, 0.0])
            entry[0] += percent
            if percent > entry[3]:
                entry[1], entry[3] = (row.get("gpu_type") or "").strip(), percent
            if start is not None and (entry[2] is None or start < entry[2]):
                entry[2] = start
    return {name: (pct, gpu_type, start) for name, (pct, gpu_type, start, _) in totals.items()}


def _columns(directory: Path, table: str, published: tuple[str, ...], used: tuple[str, ...]) -> list[str]:
    """The column names from TABLE.header when present (one CSV line), else the published order."""
    header = directory / f"{table}.header"
    if not header.is_file():
        return list(published)
    try:
        text = header.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(header), None, f"cannot read the column names ({exc})") from None
    columns = [c.strip() for c in text.strip().splitlines()[0].split(",")] if text.strip() else []
    missing = [c for c in used if c not in columns]
    if missing:
        raise InputError(str(header), "line 1", f"missing column(s) {', '.join(missing)}; the published "
                                                f"{table} columns are {','.join(published)}")
    return columns
