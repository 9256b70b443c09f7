"""The workload text of a published trace: `FORMAT:path=FILE[,key=value...]`, e.g.

    philly:path=cluster_job_log,busiest_hours=8,rate=20/h,seed=1
    pai:path=pai-2020/,cpu_jobs=drop,gpu_speed=P100:0.25|T4:0.2
    helios:path=cluster_log.csv,states=drop,bad_rows=skip

Keys (all optional but path): busiest_hours, rate (jobs per hour: 20/h, 0.5/min), seed (default: the
run's seed), assign (category | size), gpu_type, gpu_speed (TYPE:SPEED|...), states (keep | drop | flag),
cpu_jobs (drop | keep | flag), bad_rows (fail | skip). See artist.workload.traces.options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from artist.errors import InputError
from artist.workload.job import Job
from artist.workload.model import ModelProfile
from artist.workload.traces.formats import FORMATS
from artist.workload.traces.load import load_trace
from artist.workload.traces.options import OPTION_KEYS, options_from_params

TRACE_KINDS = tuple(name for name in FORMATS if name != "artist")


def parse_trace_spec(spec: str) -> tuple[str, Path, dict[str, str]]:
    """(format, path, option texts) of a `FORMAT:path=...` workload text; errors name the parameter."""
    kind, _, text = spec.partition(":")
    values: dict[str, str] = {}
    for item in filter(None, text.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(spec, f"parameter '{item}'", "expected key=value")
        key = key.strip()
        if key in values:
            raise InputError(spec, f"parameter '{key}'", "given twice")
        if key != "path" and key not in OPTION_KEYS:
            raise InputError(spec, f"parameter '{key}'", f"unknown; allowed: path, {', '.join(sorted(OPTION_KEYS))}")
        values[key] = value.strip()
    if not values.get("path"):
        raise InputError(spec, "parameter 'path'", f"required: {kind}:path=FILE")
    return kind, Path(values.pop("path")), values


def with_path(spec: str, path: Path) -> str:
    """The same workload text with its path replaced (a sweep resolves it against the spec's directory)."""
    kind, _, text = spec.partition(":")
    items = [item if not item.strip().startswith("path=") else f"path={path}" for item in text.split(",")]
    return f"{kind}:{','.join(items)}"


def trace_identity_files(path: Path) -> list[Path]:
    """The files whose contents make a trace's identity: the file, or a PAI directory's two tables and
    their headers (not its other, much larger tables)."""
    if path.is_file():
        return [path]
    return sorted(f for f in path.iterdir() if f.is_file() and f.name.startswith(("pai_job_table", "pai_task_table")))


def trace_jobs_from_spec(spec: str, models: Mapping[str, ModelProfile], seed: int,
                         notes: list[str] | None = None) -> list[Job]:
    """The jobs of a `FORMAT:path=` workload; its load report's lines appended to `notes` when given."""
    kind, path, values = parse_trace_spec(spec)
    options = options_from_params(values, spec)
    if not path.exists():
        raise InputError(spec, "parameter 'path'", f"no such file or directory: {path}")
    jobs, report = load_trace(path, models, seed, kind, options)
    if notes is not None:
        notes.extend(report.lines())
    return jobs
