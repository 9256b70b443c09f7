"""What an elastic (Pollux-style) job lets a scheduler change, and how a total batch becomes (m, s).

An elastic job trains with total batch M = K x m x (s + 1) on K GPUs: local (per-GPU, "atomic")
batch m, s gradient-accumulation passes before the synchronising pass (Pollux section 3.1). The
scheduler may pick K in [min_gpus, max_gpus] and M in [initial_batch, max_batch]; the GPU type's
memory bounds m (LocalBatchLimit). Every change of allocation costs a checkpoint-restart of
restart_seconds (Pollux section 5.3: the simulator charges a constant 30 s, the paper measured
15-120 s; Sia section 4 measures 15-250 s per model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

# Pollux's simulated checkpoint-restart delay and its scheduler's delta (paper section 5.3 and 4.2;
# digest 1.4 knob table, [P]).
POLLUX_RESTART_SECONDS = 30.0
# Candidate total batches per GPU count the agent scans ([A] adaptdl goodput.py: numpy geomspace's
# default of 50 points between the smallest feasible batch and the maximum).
BATCH_CANDIDATES = 50
CEIL_EPS = 1e-8  # tolerance for ceil of a ratio that is an integer up to rounding


@dataclass(frozen=True)
class LocalBatchLimit:
    """Per-GPU batch a GPU type can run for a model: min (smallest measured/useful) and max (memory)."""
    min_local: int
    max_local: int

    def __post_init__(self):
        if not 1 <= self.min_local <= self.max_local:
            raise ValueError(f"local batch limits must satisfy 1 <= min <= max, got {self.min_local}, "
                             f"{self.max_local}")


@dataclass(frozen=True)
class ElasticSpec:
    """The elastic part of a job. fixed_batch: a job that keeps one total batch (Pollux's NCF at 32768,
    or any non-adaptive job: efficiency 1 by definition, only throughput matters)."""
    initial_batch: int
    max_batch: int
    local_batch: Mapping[str, LocalBatchLimit] = field(default_factory=dict)
    min_gpus: int = 0
    max_gpus: int = 64
    restart_seconds: float = POLLUX_RESTART_SECONDS
    fixed_batch: int | None = None

    def __post_init__(self):
        if not 1 <= self.initial_batch <= self.max_batch:
            raise ValueError(f"need 1 <= initial_batch <= max_batch, got {self.initial_batch}, {self.max_batch}")
        if not 0 <= self.min_gpus <= self.max_gpus:
            raise ValueError(f"need 0 <= min_gpus <= max_gpus, got {self.min_gpus}, {self.max_gpus}")
        if self.restart_seconds < 0:
            raise ValueError(f"restart_seconds must be >= 0, got {self.restart_seconds}")
        if self.fixed_batch is not None and self.fixed_batch < 1:
            raise ValueError(f"fixed_batch must be >= 1, got {self.fixed_batch}")

    def limit(self, gpu_type: str) -> LocalBatchLimit:
        try:
            return self.local_batch[gpu_type]
        except KeyError:
            raise ValueError(f"no local batch limit for GPU type {gpu_type!r} "
                             f"(known: {', '.join(sorted(self.local_batch)) or 'none'})") from None


def split_batch(total_batch: float, replicas: int, limit: LocalBatchLimit, initial_batch: int
                ) -> tuple[int, int] | None:
    """(m, s) for a total batch on `replicas` GPUs, or None if no m fits the limits.

    s is the fewest accumulation passes that keep m within memory; on one GPU above M0 at least one
    accumulation pass is taken, so that the gradient statistics stay estimable from two micro-batches
    (digest 1.3 step 4, [A]). m = ceil(M / (K (s + 1)))."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    local = total_batch / replicas
    accum = math.ceil(local / limit.max_local - CEIL_EPS) - 1
    if replicas == 1 and local > initial_batch + CEIL_EPS:
        accum = max(accum, 1)
    accum = max(accum, 0)
    m = math.ceil(local / (accum + 1) - CEIL_EPS)
    if not limit.min_local <= m <= limit.max_local:
        return None
    return m, accum


def clamp_local_batch(m: int, accum_steps: int, gpus: int, spec: ElasticSpec, limit: LocalBatchLimit) -> int:
    """The loop's clamp on a split's local batch (as the artifact): never above the maximum batch through
    rounding up, never below the type's smallest local batch."""
    return max(limit.min_local, min(m, spec.max_batch // (gpus * (accum_steps + 1)) or limit.min_local))


def fixed_batch_config(total_batch: int, gpus: int, spec: ElasticSpec, gpu_type: str) -> tuple[int, int] | None:
    """(m, s) the elastic loop runs a fixed-batch job with on `gpus` GPUs of the type (jobs.py ElasticJobs.tune:
    split_batch, then clamp_local_batch); None: the batch does not split."""
    limit = spec.limit(gpu_type)
    split = split_batch(total_batch, gpus, limit, spec.initial_batch)
    if split is None:
        return None
    m, s = split
    return clamp_local_batch(m, s, gpus, spec, limit), s


def split_batches(total_batch: np.ndarray, replicas: int, limit: LocalBatchLimit, initial_batch: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """split_batch over an array of total batches: (m, s) as float arrays, m unchecked against the
    limits (the caller masks m outside [min_local, max_local])."""
    local = np.asarray(total_batch, dtype=float) / replicas
    accum = np.ceil(local / limit.max_local - CEIL_EPS) - 1
    if replicas == 1:
        accum = np.where(local > initial_batch + CEIL_EPS, np.maximum(accum, 1), accum)
    accum = np.maximum(accum, 0)
    return np.ceil(local / (accum + 1) - CEIL_EPS), accum


def candidate_batches(replicas: int, spec: ElasticSpec, limit: LocalBatchLimit) -> np.ndarray:
    """Total batches the agent considers on `replicas` GPUs: BATCH_CANDIDATES geometric points from
    max(M0, K x min_local) to max_batch (one point, the fixed batch, for a fixed-batch job). Empty when
    even the smallest local batch on every GPU exceeds max_batch."""
    if spec.fixed_batch is not None:
        return np.array([float(spec.fixed_batch)])
    low = max(spec.initial_batch, replicas * limit.min_local)
    if low > spec.max_batch:
        return np.empty(0)
    return np.geomspace(low, spec.max_batch, BATCH_CANDIDATES)
