"""The trace formats ArtISt reads, by name, and how a file's format is recognised."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from artist.errors import InputError, regular_input_file
from artist.workload.traces import acme, canonical, crius, gavel, helios, pai, philly, pollux, tiresias


@dataclass(frozen=True)
class TraceFormat:
    name: str
    title: str
    reader: Callable  # reader(path, report, skip_bad) -> Iterator[TraceRecord]
    fields_used: tuple[str, ...]
    fields_dropped: tuple[str, ...]
    # trace model name -> (ArtISt model, how it maps); None: the trace has no models (assigned by GPU time)
    model_table: dict | None = field(default=None, hash=False)


FORMATS = {f.name: f for f in (
    TraceFormat("philly", "Microsoft Philly cluster_job_log (JSON)", philly.read_philly, philly.FIELDS_USED,
                philly.FIELDS_DROPPED),
    TraceFormat("pai", "Alibaba PAI 2020 (directory of pai_job_table, pai_task_table)", pai.read_pai,
                pai.FIELDS_USED, pai.FIELDS_DROPPED),
    TraceFormat("helios", "SenseTime Helios cluster_log.csv", helios.read_helios, helios.FIELDS_USED,
                helios.FIELDS_DROPPED),
    TraceFormat("acme", "Shanghai AI Lab Acme trace_seren.csv / trace_kalos.csv", acme.read_acme, acme.FIELDS_USED,
                acme.FIELDS_DROPPED),
    TraceFormat("pollux", "Pollux / Sia workload CSV", pollux.read_pollux, pollux.FIELDS_USED,
                pollux.FIELDS_DROPPED, pollux.MODEL_TABLE),
    TraceFormat("gavel", "Gavel trace (TSV)", gavel.read_gavel, gavel.FIELDS_USED, gavel.FIELDS_DROPPED,
                gavel.MODEL_TABLE),
    TraceFormat("tiresias", "Tiresias job CSV", tiresias.read_tiresias, tiresias.FIELDS_USED,
                tiresias.FIELDS_DROPPED, tiresias.MODEL_TABLE),
    TraceFormat("crius", "Crius / Arena trace CSV", crius.read_crius, crius.FIELDS_USED, crius.FIELDS_DROPPED,
                crius.MODEL_TABLE),
    TraceFormat("artist", "ArtISt canonical trace CSV", canonical.read_canonical,
                canonical.CANONICAL_COLUMNS + canonical.OPTIONAL_COLUMNS[:2],
                canonical.OPTIONAL_COLUMNS[2:], {}),  # plans: simulate reads them (read_jobs_csv), conversions not
)}

# Header columns that identify a CSV format, checked in this order (the first whose columns are all present).
_CSV_SIGNATURES = (
    ("helios", helios.HELIOS_COLUMNS),
    ("acme", acme.FIELDS_USED + ("type", "gpu_time")),
    ("pollux", pollux.COLUMNS),
    ("tiresias", tiresias.FIELDS_USED),
    ("crius", crius.FIELDS_USED),
    ("artist", canonical.CANONICAL_COLUMNS),
)


def get_format(name: str, source: str) -> TraceFormat:
    if name not in FORMATS:
        raise InputError(source, "format", f"unknown trace format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name]


def detect_format(path: str | Path) -> str:
    """The format of a trace file or directory, from its shape and first line; InputError when none fits."""
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), None, "no such file or directory")
    if path.is_dir():
        if pai.is_pai_directory(path):
            return "pai"
        raise InputError(str(path), None, "a directory, but not the PAI 2020 tables (no pai_job_table.csv)")
    regular_input_file(path)
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(1 << 16)
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file ({exc.strerror or exc})") from None
    if head.lstrip().startswith("["):
        return "philly"
    first = next((line for line in head.splitlines() if line.strip()), "")
    if "\t" in first and gavel.gavel_layout(path) is not None:
        return "gavel"
    header = {c.strip() for c in first.split(",")}
    for name, columns in _CSV_SIGNATURES:
        if set(columns) <= header:
            return name
    raise InputError(str(path), "line 1", f"cannot tell the trace format from the first line; give it with "
                                          f"--format ({', '.join(FORMATS)})")
