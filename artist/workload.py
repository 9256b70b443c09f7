"""Models (their gradients and compute time) and jobs (who wants what, when).

A ModelProfile lists gradient tensors in backward order (the first listed is
the first whose gradient is ready in the backward pass) and the compute time
of one iteration (forward + backward) on a named reference GPU. Gradients are
grouped into buckets the way PyTorch DDP does (fill up to a byte cap in
backward order); every bucket is all-reduced as soon as its last gradient is
ready, which is what the network models overlap with the backward pass.
"""

from __future__ import annotations

import csv
import hashlib
import io
from datetime import datetime, timezone
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from artist.errors import InputError, read_input_file
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.yamlio import Fields, load_yaml_mapping

# PyTorch DDP's default bucket_cap_mb=25 (MiB), torch.nn.parallel.DistributedDataParallel docs.
DDP_BUCKET_CAP_BYTES = 25 * 1024 * 1024
# Backward costs about twice the forward FLOPs (6N = 2N forward + 4N backward per token,
# Kaplan et al. 2020, "Scaling Laws for Neural Language Models", sec. 2.1), so the
# backward pass starts after one third of an iteration's compute.
DEFAULT_FORWARD_FRACTION = 1.0 / 3.0


@dataclass(frozen=True)
class ModelProfile:
    name: str
    tensor_bytes: tuple[int, ...]  # gradient bytes per tensor, backward order
    compute_seconds: float  # forward + backward of one iteration on reference_gpu
    reference_gpu: str
    batch_size: int = 0  # per GPU; 0 when the source does not state it
    forward_fraction: float = DEFAULT_FORWARD_FRACTION
    bucket_cap_bytes: int = DDP_BUCKET_CAP_BYTES
    tensor_names: tuple[str, ...] = field(default=(), compare=False)
    source: str = field(default="", compare=False)

    def __post_init__(self):
        if not self.tensor_bytes or any(b <= 0 for b in self.tensor_bytes):
            raise ValueError(f"model {self.name}: tensor sizes must be positive and non-empty")
        if not self.compute_seconds > 0:
            raise ValueError(f"model {self.name}: compute_seconds must be > 0")
        if not 0.0 <= self.forward_fraction < 1.0:
            raise ValueError(f"model {self.name}: forward_fraction must be in [0, 1)")

    @property
    def total_bytes(self) -> int:
        return int(sum(self.tensor_bytes))

    @property
    def skew(self) -> float:
        """Largest tensor / model size (Tiresias, NSDI'19, sec. 4.2)."""
        return max(self.tensor_bytes) / self.total_bytes

    @cached_property
    def buckets(self) -> tuple[tuple[int, float], ...]:
        """(bytes, ready fraction of the iteration's compute) per bucket, in send order.

        A tensor's gradient is taken to be ready after a share of the backward
        pass proportional to the bytes of gradient produced so far (an
        assumption: backward time per layer is not in the profiles)."""
        total = self.total_bytes
        backward = 1.0 - self.forward_fraction
        out: list[tuple[int, float]] = []
        filled = 0
        produced = 0
        for b in self.tensor_bytes:
            filled += b
            produced += b
            if filled >= self.bucket_cap_bytes:
                out.append((filled, self.forward_fraction + backward * produced / total))
                filled = 0
        if filled:
            out.append((filled, 1.0))
        return tuple(out)

    def comm_signature(self) -> str:
        """Stable digest of everything about the model a network model's answer depends on."""
        payload = json.dumps(
            {"buckets": [[b, round(r, 12)] for b, r in self.buckets], "compute_s": repr(self.compute_seconds)},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @classmethod
    def from_yaml(cls, path: str | Path) -> "ModelProfile":
        path = Path(path)
        f = Fields(load_yaml_mapping(path), str(path))
        f.unknown_keys({"name", "source", "params_total", "params_source", "gradient_dtype_bytes",
                        "tensors", "compute", "forward_fraction", "bucket_cap_bytes", "notes"})
        dtype = f.integer("gradient_dtype_bytes", 4, minimum=1, maximum=8)  # fp8 .. fp64
        raw_tensors = f.raw("tensors")
        if not isinstance(raw_tensors, list) or not raw_tensors:
            raise f.error("tensors", "expected a non-empty list of [name, numel] pairs")
        names, sizes = [], []
        for i, item in enumerate(raw_tensors):
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], int) and not isinstance(item[1], bool) and item[1] > 0):
                raise f.error(f"tensors[{i}]", f"expected [name, positive numel], got {item!r}")
            names.append(item[0])
            sizes.append(item[1] * dtype)
        if f.has("params_total"):
            declared = f.integer("params_total", minimum=1)
            if declared != sum(sizes) // dtype:
                raise f.error("params_total", f"declares {declared} parameters but tensors sum to {sum(sizes) // dtype}")
        c = f.sub("compute")
        c.unknown_keys({"reference_gpu", "batch_size", "seconds_per_iteration", "source", "notes"})
        if not c.has("source"):
            raise c.error("source", "compute time must cite where it comes from")
        return cls(
            name=f.string("name"),
            tensor_bytes=tuple(sizes),
            compute_seconds=c.number("seconds_per_iteration", positive=True),
            reference_gpu=c.string("reference_gpu"),
            batch_size=c.integer("batch_size", 0, minimum=0),
            forward_fraction=_forward_fraction(f),
            bucket_cap_bytes=f.integer("bucket_cap_bytes", DDP_BUCKET_CAP_BYTES, minimum=1),
            tensor_names=tuple(names),
            source=f.string("source", ""),
        )


def _forward_fraction(f: Fields) -> float:
    value = f.number("forward_fraction", DEFAULT_FORWARD_FRACTION, minimum=0.0)
    if value >= 1.0:
        raise f.error("forward_fraction", f"must be < 1 (the backward pass takes the rest), got {value:g}")
    return value


DEFAULT_MODELS_DIR = Path(__file__).resolve().parent.parent / "workloads" / "models"


def load_models(directory: str | Path | None = None) -> dict[str, ModelProfile]:
    directory = Path(directory) if directory else DEFAULT_MODELS_DIR
    models = {}
    for path in sorted(directory.glob("*.yaml")):
        m = ModelProfile.from_yaml(path)
        if m.name in models:
            raise InputError(str(path), "field 'name'", f"model {m.name!r} is defined twice")
        models[m.name] = m
    if not models:
        raise InputError(str(directory), None, "no model profiles (*.yaml) found")
    return models


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class Job:
    job_id: str
    arrival: float  # seconds from the start of the trace
    model: str
    gpus: int
    iterations: int
    user: str = ""
    vc: str = ""

    def __post_init__(self):
        if self.gpus < 1:
            raise ValueError(f"job {self.job_id}: gpus must be >= 1")
        if self.iterations < 1:
            raise ValueError(f"job {self.job_id}: iterations must be >= 1")
        if self.arrival < 0:
            raise ValueError(f"job {self.job_id}: arrival must be >= 0")


CANONICAL_COLUMNS = ("job_id", "arrival", "model", "gpus", "iterations")
OPTIONAL_COLUMNS = ("user", "vc")


def read_jobs_csv(path: str | Path, models: Iterable[str] | None = None) -> list[Job]:
    """The project's canonical trace: job_id,arrival,model,gpus,iterations[,user,vc]."""
    path = Path(path)
    known = set(models) if models is not None else None
    with _open_csv(path) as (reader, header):
        missing = [c for c in CANONICAL_COLUMNS if c not in header]
        if missing:
            raise InputError(str(path), "line 1", f"missing column(s) {', '.join(missing)}; expected {','.join(CANONICAL_COLUMNS)}")
        jobs, seen = [], set()
        for lineno, row in reader:
            where = f"line {lineno}"
            job_id = _cell(row, "job_id", path, where)
            if job_id in seen:
                raise InputError(str(path), where, f"job_id {job_id!r} appears twice")
            seen.add(job_id)
            model = _cell(row, "model", path, where)
            if known is not None and model not in known:
                raise InputError(str(path), f"{where}, column 'model'", f"unknown model {model!r}; known: {', '.join(sorted(known))}")
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
                    raise InputError(str(self.path), f"line {lineno}", f"has {len(raw)} cells, header has {len(header)}")
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
        raise InputError(str(path), f"{where}, column '{column}'", f"must be <= {maximum:g} (artist.limits), got {text}")
    return value


# --------------------------------------------------------------------------- generators


@dataclass(frozen=True)
class JobMix:
    """What generated jobs look like: models, GPU demands and lengths to draw from."""

    models: tuple[str, ...]
    gpu_choices: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    gpu_weights: tuple[float, ...] | None = None
    # Iterations drawn log-uniformly in [min, max]: job lengths in cluster traces
    # are heavy-tailed (Philly, Jeon et al. ATC'19; Helios, Hu et al. SC'21).
    min_iterations: int = 1_000
    max_iterations: int = 100_000


def _draw_jobs(mix: JobMix, arrivals: np.ndarray, rng: np.random.Generator, prefix: str) -> list[Job]:
    n = len(arrivals)
    weights = None
    if mix.gpu_weights is not None:
        w = np.asarray(mix.gpu_weights, dtype=float)
        weights = w / w.sum()
    gpus = rng.choice(np.asarray(mix.gpu_choices), size=n, p=weights)
    model_idx = rng.integers(len(mix.models), size=n)
    lo, hi = np.log(mix.min_iterations), np.log(mix.max_iterations)
    iterations = np.maximum(1, np.round(np.exp(rng.uniform(lo, hi, size=n)))).astype(int)
    width = len(str(n - 1))
    return [
        Job(f"{prefix}{i:0{width}d}", float(arrivals[i]), mix.models[model_idx[i]], int(gpus[i]), int(iterations[i]))
        for i in range(n)
    ]


def batch_jobs(n: int, mix: JobMix, seed: int) -> list[Job]:
    """n jobs all arriving at t = 0."""
    rng = np.random.default_rng(seed)
    return _draw_jobs(mix, np.zeros(n), rng, "b")


def poisson_jobs(n: int, mix: JobMix, mean_interarrival_s: float, seed: int) -> list[Job]:
    """n jobs with exponential inter-arrival times (a Poisson process), the first at t = 0."""
    if not mean_interarrival_s > 0:
        raise ValueError("mean_interarrival_s must be > 0")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mean_interarrival_s, size=n)
    arrivals = np.concatenate([[0.0], np.cumsum(gaps[1:])]) if n else np.zeros(0)
    return _draw_jobs(mix, arrivals, rng, "p")
