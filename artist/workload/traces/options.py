"""How a trace becomes a workload: windowing, sampling, model assignment, state handling, bad rows.

The same options come from a --workload text (`philly:path=log.json,busiest_hours=8,rate=20/h,seed=1`)
and from `artist trace convert` options; both are checked here, each problem one line naming the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from artist.errors import InputError
from artist.limits import strict_int
from artist.workload.traces.csvrows import CsvRows
from artist.workload.traces.record import LoadReport

ASSIGN_RULES = ("category", "size")
STATE_CHOICES = ("keep", "drop", "flag")
MAX_WINDOW_HOURS = 10_000_000  # ~1141 years: far past any trace; bounds the hour histogram
MAX_RATE_PER_HOUR = 1_000_000.0


@dataclass(frozen=True)
class TraceOptions:
    busiest_hours: int | None = None  # keep the N consecutive hours with the most submissions
    rate_per_hour: float | None = None  # then sample this many jobs per hour of the window (no replacement)
    seed: int | None = None  # None: the run's seed
    assign: str = "category"  # model assignment for traces without models: category | size
    gpu_type: str = ""  # the GPU type the durations were logged on, when the trace names none (or to override)
    gpu_speeds: tuple[tuple[str, float], ...] = ()  # extra GPU type -> speed relative to the profiles' GPU
    states: str = "keep"  # failed / cancelled / unfinished-with-duration jobs: keep | drop | flag
    cpu_jobs: str = "drop"  # jobs asking for 0 GPUs: drop | keep (as 1 GPU) | flag (kept as 1 GPU)
    skip_bad_rows: bool = False  # malformed rows: skipped and counted instead of stopping the load


OPTION_KEYS = ("busiest_hours", "rate", "seed", "assign", "gpu_type", "gpu_speed", "states", "cpu_jobs",
               "bad_rows")


def options_from_params(values: dict[str, str], source: str) -> TraceOptions:
    """TraceOptions from key=value texts (keys in OPTION_KEYS); errors name `source` and the key."""

    def error(key, problem):
        return InputError(source, f"parameter '{key}'", problem)

    def integer(key, lo, hi):
        text = values[key]
        try:
            value = strict_int(text)
        except ValueError:
            raise error(key, f"not an integer: {text!r}") from None
        if not lo <= value <= hi:
            raise error(key, f"must be in [{lo}, {hi}], got {value}")
        return value

    def choice(key, choices, default):
        value = values.get(key, default)
        if value not in choices:
            raise error(key, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    kw: dict = {}
    if "busiest_hours" in values:
        kw["busiest_hours"] = integer("busiest_hours", 1, MAX_WINDOW_HOURS)
    if "rate" in values:
        kw["rate_per_hour"] = parse_rate(values["rate"], lambda p: error("rate", p))
    if "seed" in values:
        kw["seed"] = integer("seed", 0, 2**63 - 1)
    kw["assign"] = choice("assign", ASSIGN_RULES, "category")
    kw["states"] = choice("states", STATE_CHOICES, "keep")
    kw["cpu_jobs"] = choice("cpu_jobs", STATE_CHOICES, "drop")
    kw["skip_bad_rows"] = choice("bad_rows", ("fail", "skip"), "fail") == "skip"
    if "gpu_type" in values:
        if not values["gpu_type"]:
            raise error("gpu_type", "empty")
        kw["gpu_type"] = values["gpu_type"]
    if "gpu_speed" in values:
        kw["gpu_speeds"] = parse_gpu_speeds(values["gpu_speed"], lambda p: error("gpu_speed", p))
    return TraceOptions(**kw)


def parse_rate(text: str, error: Callable[[str], Exception]) -> float:
    """'20/h' or '20' jobs per hour; '0.5/min' per minute."""
    number, _, unit = text.partition("/")
    per = {"": 1.0, "h": 1.0, "hour": 1.0, "min": 60.0, "d": 1 / 24, "day": 1 / 24}
    if unit.strip() not in per:
        raise error(f"unit must be /h, /min or /day, got {text!r}")
    try:
        value = float(number) * per[unit.strip()]
    except ValueError:
        raise error(f"expected jobs per hour such as 20/h, got {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= MAX_RATE_PER_HOUR):
        raise error(f"must be > 0 and <= {MAX_RATE_PER_HOUR:g} jobs per hour, got {text!r}")
    return value


def parse_gpu_speeds(text: str, error: Callable[[str], Exception]) -> tuple[tuple[str, float], ...]:
    """'P100:0.3|T4:0.2' -> (('P100', 0.3), ('T4', 0.2))."""
    out = []
    for item in text.split("|"):
        name, colon, speed = item.partition(":")
        try:
            value = float(speed)
        except ValueError:
            value = math.nan
        if not colon or not name.strip() or not (math.isfinite(value) and value > 0):
            raise error(f"expected TYPE:SPEED pairs separated by '|' (speed > 0), got {item!r}")
        out.append((name.strip(), value))
    return tuple(out)


def guarded(items: Iterator, parse: Callable, report: LoadReport, skip_bad: bool) -> Iterator:
    """parse(*item) for every item, counting each in report.rows; an InputError stops the load, or with
    skip_bad is counted in report.bad_rows (the first one kept for the report) and the row skipped."""
    for item in items:
        report.rows += 1
        try:
            record = parse(*item)
        except InputError as exc:
            if not skip_bad:
                raise
            count_bad(report, exc)
            continue
        if record is not None:
            yield record


def count_bad(report: LoadReport, exc: InputError) -> None:
    report.bad_rows += 1
    if not report.first_bad:
        report.first_bad = str(exc)


def read_csv_table(path: Path, columns, what: str, parse: Callable, report: LoadReport,
                   skip_bad: bool) -> Iterator:
    """parse(path, line, row) for every row of a CSV with a header holding `columns` (named `what` in
    the error when one is missing), bad rows stopping the load or skipped and counted (guarded)."""
    with CsvRows(path) as table:
        table.require(columns, what)
        yield from guarded(table.rows(bad_row_handler(report, skip_bad)),
                           lambda lineno, row: parse(path, lineno, row), report, skip_bad)


def bad_row_handler(report: LoadReport, skip_bad: bool):
    """The on_bad callback for CsvRows.rows: count a ragged row when skipping, else None (raise)."""
    if not skip_bad:
        return None

    def on_bad(exc):
        report.rows += 1
        count_bad(report, exc)

    return on_bad
