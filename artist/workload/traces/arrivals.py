"""A trace's arrival process alone: the gaps between its submissions, for generators that replay them.

A generated workload draws its jobs (models, GPU counts, lengths) from a mix; its arrivals may come from a
published trace instead of a Poisson process, so that bursts and the hour-to-hour swings of a real cluster
(Philly, Helios: gaps with a coefficient of variation above 1, busy hours several times the quiet ones) reach
the cluster loop. Every submission the trace's reader yields counts (failed and CPU-only jobs arrived too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from artist.errors import InputError
from artist.workload.traces.formats import detect_format, get_format
from artist.workload.traces.record import LoadReport


def submission_times(path: Path) -> np.ndarray:
    """The trace's submission times (its own clock), sorted; InputError naming the file when unreadable."""
    trace_format = get_format(detect_format(path), str(path))
    times = [r.submit for r in trace_format.reader(path, LoadReport(str(path), trace_format.name), False)]
    if len(times) < 2:
        raise InputError(str(path), None, f"{len(times)} submissions: an arrival process needs at least 2")
    return np.sort(np.asarray(times, dtype=float))


def arrival_gaps(paths: Sequence[Path]) -> np.ndarray:
    """Seconds between successive submissions of each trace in turn, the traces end to end (the gap
    between one trace's last job and the next trace's first is not invented: it is left out)."""
    return np.concatenate([np.diff(submission_times(Path(p))) for p in paths])
