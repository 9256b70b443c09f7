"""Windowing and sampling as the papers do: the busiest N hours of a trace, then J jobs per hour.

Pollux (OSDI'21, sec. 5.1) samples 160 jobs from the busiest 8 hours of the Philly trace; Sia (SOSP'23)
samples 10 traces from the 8 busiest hours of Philly and Helios at 20 jobs/hour. Here hours are counted
from the first submission (hour h = [t0 + 3600 h, t0 + 3600 (h + 1))); the busiest window is the N
consecutive hours with the most submissions (the earliest on a tie); a rate keeps round(rate x hours)
jobs of the window drawn uniformly without replacement with the seed (all of them if it has fewer).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from artist.workload.traces.record import LoadReport, TraceRecord

HOUR_S = 3600.0


def hourly_counts(submits: Sequence[float]) -> np.ndarray:
    """Submissions per hour from the first one (submits sorted)."""
    if not len(submits):
        return np.zeros(0, dtype=np.int64)
    hours = ((np.asarray(submits, dtype=float) - submits[0]) // HOUR_S).astype(np.int64)
    return np.bincount(hours)


def busiest_window(counts: np.ndarray, hours: int) -> tuple[int, int]:
    """(first hour, submissions) of the `hours` consecutive hours with the most submissions; earliest on ties."""
    if len(counts) <= hours:
        return 0, int(counts.sum())
    sums = np.convolve(counts, np.ones(hours, dtype=np.int64), mode="valid")
    first = int(np.argmax(sums))  # argmax returns the first maximum
    return first, int(sums[first])


def select(records: list[TraceRecord], busiest_hours: int | None, rate_per_hour: float | None,
           rng: np.random.Generator, report: LoadReport) -> list[TraceRecord]:
    """The records of the busiest window, sampled at the rate (records sorted by (submit, job_id))."""
    if not records:
        return records
    hours = None
    if busiest_hours is not None:
        counts = hourly_counts([r.submit for r in records])
        first, total = busiest_window(counts, busiest_hours)
        lo = records[0].submit + first * HOUR_S
        hi = lo + busiest_hours * HOUR_S
        records = [r for r in records if lo <= r.submit < hi]
        hours = busiest_hours
        report.note(f"busiest {busiest_hours} h: hours {first}-{first + busiest_hours} after the first "
                    f"submission, {total} jobs")
    if rate_per_hour is not None and records:
        if hours is None:
            hours = max(1, math.ceil((records[-1].submit - records[0].submit + 1e-9) / HOUR_S))
        wanted = int(round(rate_per_hour * hours))
        if wanted >= len(records):
            report.note(f"rate {rate_per_hour:g}/h over {hours} h asks for {wanted} jobs; the window has "
                        f"{len(records)}: all kept")
        else:
            chosen = np.sort(rng.choice(len(records), size=wanted, replace=False))
            records = [records[i] for i in chosen]
            report.note(f"sampled {wanted} jobs ({rate_per_hour:g}/h over {hours} h)")
    return records
