"""Measured tables of one elastic application (the Pollux artifact's simulator/traces/<model>/).

A directory holds (columns as the artifact writes them):
- validation-<batch>.csv: progress, iteration, metric, grad_sqr, grad_var, one row per epoch of a
  training run at total batch <batch> (progress: cumulative M0-equivalent steps at the epoch's end);
- placements.csv: placement, local_bsz, step_time, sync_time (placement: GPUs per node as digits,
  '13' = 1 GPU on one node and 3 on another);
- scalability.csv: num_nodes, num_replicas, local_bsz, step_time, sync_time.

What ArtISt keeps of the throughput tables is the compute part, step_time - sync_time, per local
batch (the median over every measured placement: the forward + backward time barely depends on the
placement, and the median ignores the stragglers of a few multi-node runs); synchronisation then comes
from ArtISt's network model of the actual placement. The whole table stays readable (`placement_rows`)
for comparisons against the measured step times.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from artist.elastic.spec import LocalBatchLimit
from artist.errors import InputError
from artist.perf.efficiency import EpochCurve, GradientNoiseReplay
from artist.workload.traces.csvrows import CsvRows, number

VALIDATION_COLUMNS = ("progress", "iteration", "metric", "grad_sqr", "grad_var")
PLACEMENT_COLUMNS = ("placement", "local_bsz", "step_time", "sync_time")
MAX_ROWS = 100_000  # the artifact's largest table has 1,661 rows; a bigger file is not one of these


def read_columns(path: Path, columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The named columns of a measured table (numbers >= 0; `metric` any sign), each an array; one line
    naming the file and row on anything wrong, a bound on the rows."""
    out: dict[str, list[float]] = {c: [] for c in columns}
    with CsvRows(path) as rows:
        rows.require(columns, "measurement")
        for lineno, row in rows.rows():
            if len(out[columns[0]]) >= MAX_ROWS:
                raise InputError(str(path), f"line {lineno}", f"more than {MAX_ROWS} rows")
            for c in columns:
                minimum = None if c == "metric" else 0
                out[c].append(number(row, c, path, f"line {lineno}", minimum=minimum))
    if not out[columns[0]]:
        raise InputError(str(path), None, "no measurement rows")
    return {c: np.asarray(v, dtype=float) for c, v in out.items()}


def read_validation(path: Path, batch: int) -> EpochCurve:
    t = read_columns(path, VALIDATION_COLUMNS)
    if np.any(np.diff(t["progress"]) < 0):
        raise InputError(str(path), "column 'progress'", "must not decrease from one epoch to the next")
    return EpochCurve(batch=batch, progress=t["progress"], metric=t["metric"], grad_sqr=t["grad_sqr"],
                      grad_var=t["grad_var"], source=str(path))


@dataclass(frozen=True)
class ComputeTable:
    """Forward + backward seconds of one GPU per local batch (measured points, linear in between)."""
    gpu_type: str
    local_batches: np.ndarray
    seconds: np.ndarray
    source: str
    table: Path | None = None  # the measured placements table it was read from (the whole step's source)

    def __call__(self, local_batch) -> np.ndarray | float:
        lo, hi = self.local_batches[0], self.local_batches[-1]
        lb = np.asarray(local_batch, dtype=float)
        if np.any(lb < lo) or np.any(lb > hi):
            raise ValueError(f"{self.source}: local batch {local_batch} outside the measured range [{lo:g}, {hi:g}]")
        out = np.interp(lb, self.local_batches, self.seconds)
        return out if out.ndim else float(out)


def read_compute(path: Path, gpu_type: str) -> tuple[ComputeTable, dict[str, np.ndarray]]:
    t = read_columns(path, PLACEMENT_COLUMNS)
    compute = t["step_time"] - t["sync_time"]
    bad = np.flatnonzero(compute <= 0)
    if bad.size:
        raise InputError(str(path), f"row {int(bad[0]) + 1}", "step_time must exceed sync_time")
    batches = np.unique(t["local_bsz"])
    seconds = np.array([np.median(compute[t["local_bsz"] == b]) for b in batches])
    return ComputeTable(gpu_type, batches, seconds, f"{path} (median of step_time - sync_time)", Path(path)), t


@dataclass(frozen=True)
class MeasuredApplication:
    name: str
    replay: GradientNoiseReplay        # gradient statistics and epoch ends
    compute: dict[str, ComputeTable]   # per GPU type
    limits: dict[str, LocalBatchLimit]  # per GPU type: memory bounds on the local batch
    placement_rows: dict[str, np.ndarray]
    max_batch: int
    source: str

    @property
    def initial_batch(self) -> int:
        return self.replay.initial_batch

    def with_gpu_type(self, gpu_type: str, table: str | Path, max_local_batch: int | None = None
                      ) -> "MeasuredApplication":
        """The same application with one more GPU type's compute table (a placements CSV measured on it)."""
        if gpu_type in self.compute:
            raise InputError(str(table), None, f"GPU type {gpu_type!r} of {self.name} is already known")
        compute, _ = read_compute(Path(table), gpu_type)
        lo = int(compute.local_batches[0])
        hi = int(compute.local_batches[-1]) if max_local_batch is None else int(max_local_batch)
        if hi < lo:
            raise InputError(str(table), "max_local_batch", f"{hi} is below the smallest measured local batch {lo}")
        return dataclasses.replace(self, compute={**self.compute, gpu_type: compute},
                                   limits={**self.limits, gpu_type: LocalBatchLimit(lo, hi)})


def read_application(directory: str | Path, gpu_type: str, epochs: int | None = None,
                     max_local_batch: int | None = None, max_batch: int | None = None) -> MeasuredApplication:
    """One artifact directory. Defaults as the artifact's simulator: M0 = smallest measured batch,
    max batch = largest, local batch limits = the measured range, epochs = the shortest curve."""
    directory = Path(directory)
    curves: dict[int, EpochCurve] = {}
    for path in sorted(directory.glob("validation-*.csv")):
        match = re.fullmatch(r"validation-(\d+)\.csv", path.name)
        if not match or int(match.group(1)) < 1:
            raise InputError(str(path), None, "name must be validation-<batch size>.csv")
        curves[int(match.group(1))] = read_validation(path, int(match.group(1)))
    if not curves:
        raise InputError(str(directory), None, "no validation-<batch>.csv tables")
    try:
        replay = GradientNoiseReplay(curves, epochs=epochs, name=directory.name)
    except ValueError as exc:
        raise InputError(str(directory), "epochs", str(exc)) from None
    compute, rows = read_compute(directory / "placements.csv", gpu_type)
    lo = int(compute.local_batches[0])
    hi = int(compute.local_batches[-1]) if max_local_batch is None else int(max_local_batch)
    if hi < lo:
        raise InputError(str(directory), "max_local_batch", f"{hi} is below the smallest measured local batch {lo}")
    top = max(curves) if max_batch is None else int(max_batch)
    if top < replay.initial_batch:
        raise InputError(str(directory), "max_batch", f"{top} is below the initial batch {replay.initial_batch}")
    return MeasuredApplication(name=directory.name, replay=replay, compute={gpu_type: compute},
                               limits={gpu_type: LocalBatchLimit(lo, hi)}, placement_rows=rows,
                               max_batch=top, source=str(directory))
