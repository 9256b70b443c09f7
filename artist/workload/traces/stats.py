"""What a trace holds, before any mapping: jobs, GPU demands, arrivals per hour, GPU-hours, states."""

from __future__ import annotations

from array import array
from collections import Counter
from pathlib import Path

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S

from artist.workload.traces.formats import detect_format, get_format
from artist.workload.traces.record import LoadReport, state_class
from artist.workload.traces.window import busiest_window, hourly_counts


def trace_stats(path: str | Path, fmt: str | None = None, skip_bad_rows: bool = False) -> dict:
    """Counts over every job the reader reads (streamed; only submit times are kept per job). jobs counts
    every entry; the histograms, arrivals and GPU-hours cover those with a GPU request (gpu_jobs + cpu_jobs);
    gpu_hours sums gpus x logged run time over jobs that log one (jobs_with_run_time of them)."""
    path = Path(path)
    trace_format = get_format(fmt or detect_format(path), str(path))
    report = LoadReport(str(path), trace_format.name)
    gpus, states, models, gpu_types = Counter(), Counter(), Counter(), Counter()
    submits = array("d")  # 8 bytes per job
    first = last = None  # the earliest and latest records, to name one if the span is too long
    gpu_seconds, with_run_time = 0.0, 0
    for r in trace_format.reader(path, report, skip_bad_rows):
        gpus[r.gpus] += 1
        states[state_class(r.state)] += 1
        if r.model:
            models[r.model] += 1
        if r.gpu_type:
            gpu_types[r.gpu_type] += 1
        submits.append(r.submit)
        if first is None or r.submit < first.submit:
            first = r
        if last is None or r.submit > last.submit:
            last = r
        if r.duration is not None:
            gpu_seconds += r.gpus * r.duration
            with_run_time += 1
    if first is not None and last.submit - first.submit > MAX_ARRIVAL_S:
        raise InputError(str(path), last.where, f"submitted {last.submit - first.submit:g} s after the job on "
                                                f"{first.where}; at most {MAX_ARRIVAL_S:g} s (artist.limits)")
    submits = array("d", sorted(submits))
    counts = hourly_counts(submits)
    busiest = {}
    for hours in (1, 8):
        first, total = busiest_window(counts, hours)
        busiest[f"busiest_{hours}h"] = {"first_hour": first, "jobs": total}
    return {
        "file": str(path),
        "format": trace_format.name,
        "jobs": report.rows - report.bad_rows,  # every job entry read, described or not
        "gpu_jobs": len(submits) - gpus.get(0, 0),
        "cpu_jobs": gpus.get(0, 0),
        "jobs_without_gpus": report.rows - report.bad_rows - len(submits),  # e.g. Philly jobs with no attempt
        "bad_rows": report.bad_rows,
        "dropped_by_reader": dict(report.dropped),
        "gpu_hours": gpu_seconds / 3600.0,
        "jobs_with_run_time": with_run_time,
        "gpu_histogram": {str(k): v for k, v in sorted(gpus.items())},
        "span_hours": (submits[-1] - submits[0]) / 3600.0 if submits else 0.0,
        "arrivals_per_hour": [int(c) for c in counts],
        **busiest,
        "states": dict(sorted(states.items())),
        "models": dict(sorted(models.items())),
        "gpu_types": dict(sorted(gpu_types.items())),
        "notes": list(report.notes),
    }


def stats_lines(s: dict) -> list[str]:
    """The human-readable summary `artist trace stats` prints."""
    per_hour = s["arrivals_per_hour"]
    lines = [
        f"{s['file']}: {s['format']} trace",
        f"jobs              {s['jobs']} ({s['gpu_jobs']} GPU, {s['cpu_jobs']} CPU-only"
        + (f", {s['jobs_without_gpus']} with no GPU request in the trace" if s["jobs_without_gpus"] else "") + ")",
        f"GPU-hours         {s['gpu_hours']:.1f} (over {s['jobs_with_run_time']} jobs with a logged run time)",
        f"span              {s['span_hours']:.1f} h",
    ]
    if per_hour:
        lines.append(f"arrivals per hour mean {sum(per_hour) / len(per_hour):.1f}, max {max(per_hour)}; busiest 8 h "
                     f"from hour {s['busiest_8h']['first_hour']}: {s['busiest_8h']['jobs']} jobs")
        if len(per_hour) <= 48:  # a short trace: every hour (--json has them all for any length)
            lines.append("  by hour         " + " ".join(str(n) for n in per_hour))
    lines.append("GPU demand        " + ", ".join(f"{g} GPU: {n}" for g, n in s["gpu_histogram"].items()))
    lines.append("states            " + ", ".join(f"{k}: {v}" for k, v in s["states"].items()))
    for key, title in (("models", "models"), ("gpu_types", "GPU types")):
        if s[key]:
            lines.append(f"{title:<18}" + ", ".join(f"{k}: {v}" for k, v in s[key].items()))
    if s["bad_rows"]:
        lines.append(f"bad rows skipped  {s['bad_rows']}")
    for reason, n in s["dropped_by_reader"].items():
        lines.append(f"no GPU request    {n}: {reason}")
    lines.extend(f"note: {n}" for n in s["notes"])
    return lines
