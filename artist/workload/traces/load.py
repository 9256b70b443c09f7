"""A trace file -> ArtISt jobs: read (streamed), filter by state and GPUs, window and sample, assign models
and iterations, shift arrivals to start at 0. Everything a load decided is counted in its LoadReport."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_ITERATIONS
from artist.workload.job import Job
from artist.workload.model import ModelProfile
from artist.workload.traces import mapping
from artist.workload.traces.formats import TraceFormat, detect_format, get_format
from artist.workload.traces.options import TraceOptions, count_bad
from artist.workload.traces.record import COMPLETED, LoadReport, TraceRecord, state_class
from artist.workload.traces.window import select

NO_RUN_TIME = "no run time logged (no end or start: still running, or a logging gap)"


def load_trace(path: str | Path, models: Mapping[str, ModelProfile], seed: int, fmt: str | None = None,
               options: TraceOptions = TraceOptions()) -> tuple[list[Job], LoadReport]:
    """The jobs of a trace in any supported format (detected when `fmt` is None), and what the load did."""
    path = Path(path)
    trace_format = get_format(fmt or detect_format(path), str(path))
    report = LoadReport(str(path), trace_format.name)
    records = kept_records(path, trace_format, options, report)
    rng = np.random.default_rng(options.seed if options.seed is not None else seed)
    records = select(records, options.busiest_hours, options.rate_per_hour, rng, report)
    jobs = _jobs(path, records, trace_format, models, options, rng, report)
    report.kept = len(jobs)
    return jobs, report


def kept_records(path: Path, trace_format: TraceFormat, options: TraceOptions,
                 report: LoadReport) -> list[TraceRecord]:
    """The trace's records that become jobs, sorted by (submit, job_id): states and CPU-only jobs handled
    as the options say, jobs without a run time dropped where the model needs one, ids checked unique."""
    needs_run_time = trace_format.model_table is None
    kept: list[TraceRecord] = []
    first_seen: dict[str, str] = {}
    for r in trace_format.reader(path, report, options.skip_bad_rows):
        if r.job_id in first_seen:
            error = InputError(str(path), r.where, f"job id {r.job_id!r} appears twice (first on "
                                                   f"{first_seen[r.job_id]})")
            if not options.skip_bad_rows:
                raise error
            count_bad(report, error)
            continue
        first_seen[r.job_id] = r.where
        if needs_run_time and r.duration is None:
            report.drop(NO_RUN_TIME)
            continue
        outcome = state_class(r.state)
        if outcome != COMPLETED:
            reason = f"{outcome} (state {r.state})"
            if options.states == "drop":
                report.drop(reason)
                continue
            if options.states == "flag":
                report.flag(reason, r.job_id)
        if r.gpus == 0:
            if options.cpu_jobs == "drop":
                report.drop("CPU-only (0 GPUs)")
                continue
            if options.cpu_jobs == "flag":
                report.flag("CPU-only (0 GPUs), run on 1 GPU", r.job_id)
            r.gpus = 1
        kept.append(r)
    kept.sort(key=lambda r: (r.submit, r.job_id))
    check_span(path, kept)
    return kept


def check_span(path: Path, records: list[TraceRecord]) -> None:
    """Submissions span at most MAX_ARRIVAL_S (checked before the hour histogram of a window is built)."""
    if records and records[-1].submit - records[0].submit > MAX_ARRIVAL_S:
        last = records[-1]
        raise InputError(str(path), last.where, f"submitted {last.submit - records[0].submit:g} s after the first "
                                                f"job; at most {MAX_ARRIVAL_S:g} s (artist.limits)")


def _jobs(path: Path, records: list[TraceRecord], trace_format: TraceFormat, models: Mapping[str, ModelProfile],
          options: TraceOptions, rng: np.random.Generator, report: LoadReport) -> list[Job]:
    if not records:
        return []
    source = str(path)
    t0 = records[0].submit
    names = _model_names(path, records, trace_format, models, options, rng, report)
    speeds: dict[str, float] = {}
    jobs = []
    for r, model in zip(records, names):
        arrival = r.submit - t0
        if arrival > MAX_ARRIVAL_S:
            raise InputError(source, r.where, f"submitted {arrival:g} s after the first job; at most "
                                              f"{MAX_ARRIVAL_S:g} s (artist.limits)")
        if r.iterations is not None:
            iterations = r.iterations
        else:
            gpu_type = options.gpu_type or r.gpu_type or "A100"
            if gpu_type not in speeds:
                speeds[gpu_type] = _speed(gpu_type, options, report)
            iterations = mapping.iterations_for(r.duration, models[model], speeds[gpu_type])
            if iterations > MAX_ITERATIONS:
                raise InputError(source, r.where, f"{r.duration:g} s of {model} is {iterations} iterations; at "
                                                  f"most {MAX_ITERATIONS} (artist.limits)")
        jobs.append(Job(r.job_id, arrival, model, r.gpus, iterations, r.user, r.vc))
    if trace_format.model_table is None:
        gpu_types = sorted(speeds)
        report.note(f"models by GPU time ({options.assign} rule); iterations = run time / step time on "
                    f"{', '.join(f'{t} (speed {speeds[t]:g})' for t in gpu_types)}")
    return jobs


def _model_names(path, records, trace_format, models, options, rng, report) -> list[str]:
    source = str(path)
    if trace_format.model_table is not None:
        out = []
        for r in records:
            model = trace_format.model_table.get(r.model, (r.model, ""))[0]
            if model not in models:
                raise InputError(source, r.where, f"model {r.model!r} maps to {model!r}, which is not among the "
                                                  f"models ({', '.join(sorted(models))})")
            out.append(model)
        stand_ins = sorted({f"{r.model} -> {trace_format.model_table[r.model][0]}" for r in records
                            if r.model in trace_format.model_table
                            and not trace_format.model_table[r.model][1].startswith("name match")})
        if stand_ins:
            report.note(f"models standing in for the trace's: {'; '.join(stand_ins)}")
        return out
    choices = mapping.category_choices(options.assign, models, source)
    out = []
    for r in records:
        group = choices[mapping.category(r.gpus * r.duration / 3600.0)]
        out.append(group[int(rng.integers(len(group)))] if len(group) > 1 else group[0])
    return out


def _speed(gpu_type: str, options: TraceOptions, report: LoadReport) -> float:
    speed = mapping.gpu_speed(gpu_type, options.gpu_speeds)
    if speed is None:
        report.note(f"GPU type {gpu_type!r} has no speed figure (give gpu_speed={gpu_type}:SPEED): taken as the "
                    f"profiles' A100, speed 1")
        return 1.0
    return speed
