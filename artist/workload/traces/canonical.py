"""ArtISt's canonical trace CSV: job_id,arrival,model,gpus,iterations[,user,vc] (read and write)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable, Sequence

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.workload.job import Job
from artist.workload.traces.csvrows import CsvRows, cell, number

CANONICAL_COLUMNS = ("job_id", "arrival", "model", "gpus", "iterations")
OPTIONAL_COLUMNS = ("user", "vc")


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
            if known is not None and model not in known:
                raise InputError(str(path), f"{where}, column 'model'",
                                 f"unknown model {model!r}; known: {', '.join(sorted(known))}")
            jobs.append(Job(
                job_id=job_id,
                arrival=number(row, "arrival", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
                model=model,
                gpus=int(number(row, "gpus", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
                iterations=int(number(row, "iterations", path, where, minimum=1, integer=True,
                                      maximum=MAX_ITERATIONS)),
                user=(row.get("user") or "").strip(),
                vc=(row.get("vc") or "").strip(),
            ))
    return sorted(jobs, key=lambda j: (j.arrival, j.job_id))


def write_jobs_csv(jobs: Sequence[Job], path: str | Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(CANONICAL_COLUMNS + OPTIONAL_COLUMNS)
        for j in jobs:
            w.writerow([j.job_id, repr(float(j.arrival)), j.model, j.gpus, j.iterations, j.user, j.vc])


def read_canonical(path: str | Path, report, skip_bad: bool = False):
    """The canonical CSV as TraceRecords (for `artist trace stats` and conversions between formats)."""
    from artist.workload.traces.options import bad_row_handler, guarded
    from artist.workload.traces.record import TraceRecord

    path = Path(path)

    def record(lineno, row):
        where = f"line {lineno}"
        return TraceRecord(
            job_id=cell(row, "job_id", path, where),
            submit=number(row, "arrival", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
            gpus=int(number(row, "gpus", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
            where=where, model=cell(row, "model", path, where),
            iterations=int(number(row, "iterations", path, where, minimum=1, integer=True, maximum=MAX_ITERATIONS)),
            user=(row.get("user") or "").strip(), vc=(row.get("vc") or "").strip())

    with CsvRows(path) as table:
        table.require(CANONICAL_COLUMNS, "canonical trace")
        yield from guarded(table.rows(bad_row_handler(report, skip_bad)), record, report, skip_bad)
