"""Job traces: the canonical CSV (read and write), Helios' cluster_log.csv, and the CSV row reader they share."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from artist.errors import InputError, read_input_file
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.workload.job import Job
from artist.workload.model import ModelProfile

CANONICAL_COLUMNS = ("job_id", "arrival", "model", "gpus", "iterations")
OPTIONAL_COLUMNS = ("user", "vc")


def read_jobs_csv(path: str | Path, models: Iterable[str] | None = None) -> list[Job]:
    """The project's canonical trace: job_id,arrival,model,gpus,iterations[,user,vc]."""
    path = Path(path)
    known = set(models) if models is not None else None
    with _open_csv(path) as (reader, header):
        missing = [c for c in CANONICAL_COLUMNS if c not in header]
        if missing:
            raise InputError(str(path), "line 1",
                             f"missing column(s) {', '.join(missing)}; expected {','.join(CANONICAL_COLUMNS)}")
        jobs, seen = [], set()
        for lineno, row in reader:
            where = f"line {lineno}"
            job_id = _cell(row, "job_id", path, where)
            if job_id in seen:
                raise InputError(str(path), where, f"job_id {job_id!r} appears twice")
            seen.add(job_id)
            model = _cell(row, "model", path, where)
            if known is not None and model not in known:
                raise InputError(str(path), f"{where}, column 'model'",
                                 f"unknown model {model!r}; known: {', '.join(sorted(known))}")
            jobs.append(Job(
                job_id=job_id,
                arrival=_number(row, "arrival", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
                model=model,
                gpus=int(_number(row, "gpus", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
                iterations=int(_number(row, "iterations", path, where, minimum=1, integer=True,
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


HELIOS_COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
                  "submit_time", "start_time", "end_time", "duration", "queue")


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
    with _open_csv(path) as (reader, header):
        missing = [c for c in HELIOS_COLUMNS if c not in header]
        if missing:
            raise InputError(str(path), "line 1", f"missing Helios column(s) {', '.join(missing)}")
        for lineno, row in reader:
            where = f"line {lineno}"
            gpus = int(_number(row, "gpu_num", path, where, minimum=0, integer=True, maximum=MAX_GPUS))
            submit = _timestamp(row, "submit_time", path, where)
            duration = _number(row, "duration", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S)
            if gpus == 0 and not include_cpu_jobs:
                continue
            rows.append((submit, _cell(row, "job_id", path, where), gpus, duration,
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


class _open_csv:
    """Context manager yielding (numbered rows, header) with a clear error on a ragged row."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        text, _ = read_input_file(self.path)  # UTF-8 (BOM dropped), bad bytes named by line
        self.fh = io.StringIO(text, newline="")
        reader = csv.reader(self.fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            self.fh.close()
            raise InputError(str(self.path), "line 1", "empty file, expected a header row") from None

        def rows():
            for raw in reader:
                lineno = reader.line_num
                if not raw or all(not c.strip() for c in raw):
                    continue
                if len(raw) != len(header):
                    raise InputError(str(self.path), f"line {lineno}",
                                     f"has {len(raw)} cells, header has {len(header)}")
                yield lineno, dict(zip(header, raw))

        return rows(), header

    def __exit__(self, *exc):
        self.fh.close()
        return False


def _cell(row: dict, column: str, path: Path, where: str) -> str:
    value = (row.get(column) or "").strip()
    if not value:
        raise InputError(str(path), f"{where}, column '{column}'", "empty")
    return value


def _timestamp(row, column, path, where) -> float:
    """Seconds: a number, or 'YYYY-MM-DD HH:MM:SS' as Helios' cluster_log.csv stores
    times (read as UTC; only differences between rows matter)."""
    text = _cell(row, column, path, where)
    try:
        return float(text)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(str(path), f"{where}, column '{column}'",
                         f"not a number or a 'YYYY-MM-DD HH:MM:SS' time: {text!r}") from None
    return stamp.replace(tzinfo=stamp.tzinfo or timezone.utc).timestamp()


def _number(row, column, path, where, minimum=None, integer=False, maximum=None) -> float:
    text = _cell(row, column, path, where)
    try:
        value = float(text)
    except ValueError:
        raise InputError(str(path), f"{where}, column '{column}'", f"not a number: {text!r}") from None
    if not np.isfinite(value):
        raise InputError(str(path), f"{where}, column '{column}'", f"not a finite number: {text!r}")
    if integer and value != int(value):
        raise InputError(str(path), f"{where}, column '{column}'", f"not an integer: {text!r}")
    if minimum is not None and value < minimum:
        raise InputError(str(path), f"{where}, column '{column}'", f"must be >= {minimum}, got {text}")
    if maximum is not None and value > maximum:
        raise InputError(str(path), f"{where}, column '{column}'",
                         f"must be <= {maximum:g} (artist.limits), got {text}")
    return value
