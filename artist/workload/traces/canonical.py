"""ArtISt's canonical trace CSV: job_id,arrival,model,gpus,iterations[,user,vc,plan,global_batch] (read and write).

A row with a plan is a hybrid-parallel job of an LLM-zoo model (artist/workload/zoo.py): `plan` is
dp=D;tp=T;pp=P[;ep=E][;microbatches=M] (';' or ',' between the pairs), `global_batch` the sequences per
step, from which the micro-batches follow (parallel/plan.py: plan_for_job); iterations are training steps."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable, Sequence

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.parallel.plan import plan_for_job
from artist.workload.job import Job
from artist.workload.zoo import ZOO
from artist.workload.traces.csvrows import CsvRows, cell, number

MAX_GLOBAL_BATCH = 1 << 24  # sequences per step, as `artist plans --global-batch` bounds it
CANONICAL_COLUMNS = ("job_id", "arrival", "model", "gpus", "iterations")
OPTIONAL_COLUMNS = ("user", "vc", "plan", "global_batch")


def read_jobs_csv(path: str | Path, models: Iterable[str] | None = None) -> list[Job]:
    """The project's canonical trace: job_id,arrival,model,gpus,iterations[,user,vc]."""
    path = Path(path)
    known = set(models) if models is not None else None
    with CsvRows(path) as table:
        missing = [c for c in CANONICAL_COLUMNS if c not in table.header]
        if missing:
            raise InputError(str(path), "line 1",
                             f"missing column(s) {', '.join(missing)}; expected {','.join(CANONICAL_COLUMNS)}")
        jobs, seen = [], set()
        for lineno, row in table.rows():
            where = f"line {lineno}"
            job_id = cell(row, "job_id", path, where)
            if job_id in seen:
                raise InputError(str(path), where, f"job_id {job_id!r} appears twice")
            seen.add(job_id)
            model = cell(row, "model", path, where)
            plan_text = (row.get("plan") or "").strip()
            if not plan_text and known is not None and model not in known:
                raise InputError(str(path), f"{where}, column 'model'",
                                 f"unknown model {model!r}; known: {', '.join(sorted(known))}")
            gpus = int(number(row, "gpus", path, where, minimum=1, integer=True, maximum=MAX_GPUS))
            plan, global_batch = _hybrid_columns(row, model, gpus, path, where)
            jobs.append(Job(
                job_id=job_id,
                arrival=number(row, "arrival", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
                model=model,
                gpus=gpus,
                iterations=int(number(row, "iterations", path, where, minimum=1, integer=True,
                                      maximum=MAX_ITERATIONS)),
                user=(row.get("user") or "").strip(),
                vc=(row.get("vc") or "").strip(),
                plan=plan,
                global_batch=global_batch,
            ))
    return sorted(jobs, key=lambda j: (j.arrival, j.job_id))


def _hybrid_columns(row, model: str, gpus: int, path: Path, where: str) -> tuple[str, int]:
    """(plan text, global batch) of a row; ('', 0) for a data-parallel job."""
    plan_text = (row.get("plan") or "").strip()
    batch_text = (row.get("global_batch") or "").strip()
    global_batch = int(number(row, "global_batch", path, where, minimum=1, integer=True,
                              maximum=MAX_GLOBAL_BATCH)) if batch_text else 0
    if not plan_text:
        if global_batch:
            raise InputError(str(path), f"{where}, column 'global_batch'", "only with a plan (column 'plan')")
        return "", 0
    if model not in ZOO:
        raise InputError(str(path), f"{where}, column 'model'",
                         f"a job with a plan needs an LLM-zoo model; {model!r} is not one of {', '.join(ZOO)}")
    if plan_text.lower() == "auto":
        if not global_batch:
            raise InputError(str(path), f"{where}, column 'global_batch'",
                             "plan auto needs the global batch (the plans are those that split it)")
        return "auto", global_batch
    try:
        plan = plan_for_job(plan_text, gpus, global_batch)
        if plan.ep > 1 and not ZOO[model].is_moe:
            raise ValueError(f"ep={plan.ep}: model {model} has no experts")
    except ValueError as exc:
        raise InputError(str(path), f"{where}, column 'plan'", str(exc)) from None
    return plan.text(), global_batch


def write_jobs_csv(jobs: Sequence[Job], path: str | Path) -> None:
    """The canonical CSV; the plan and global_batch columns only when a job has a plan (';' in the plan
    so that the cell needs no quotes)."""
    hybrid = any(j.plan for j in jobs)
    columns = CANONICAL_COLUMNS + (OPTIONAL_COLUMNS if hybrid else OPTIONAL_COLUMNS[:2])
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        for j in jobs:
            row = [j.job_id, repr(float(j.arrival)), j.model, j.gpus, j.iterations, j.user, j.vc]
            if hybrid:
                row += [j.plan.replace(",", ";"), j.global_batch or ""]
            w.writerow(row)


def read_canonical(path: str | Path, report, skip_bad: bool = False):
    """The canonical CSV as TraceRecords (for `artist trace stats` and conversions between formats)."""
    from artist.workload.traces.options import read_csv_table
    from artist.workload.traces.record import TraceRecord

    def record(path, lineno, row):
        where = f"line {lineno}"
        return TraceRecord(
            job_id=cell(row, "job_id", path, where),
            submit=number(row, "arrival", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
            gpus=int(number(row, "gpus", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
            where=where, model=cell(row, "model", path, where),
            iterations=int(number(row, "iterations", path, where, minimum=1, integer=True, maximum=MAX_ITERATIONS)),
            user=(row.get("user") or "").strip(), vc=(row.get("vc") or "").strip())

    return read_csv_table(Path(path), CANONICAL_COLUMNS, "canonical trace", record, report, skip_bad)
