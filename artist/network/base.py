"""The one interface the simulator and the policies use to ask about the network.

    CommModel.iteration_comm_time(model, placement) -> CommResult

Every backend (analytical, ns-3, cached, calibrated) answers through it, so the
simulator never knows which one answered.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from artist.placement import Placement
from artist.workload import ModelProfile


@dataclass(frozen=True)
class CommResult:
    exposed_seconds: float  # communication left after overlap with compute, per iteration
    collective_seconds: float  # sum of the buckets' all-reduce times, per iteration
    backend: str
    calibrated: bool = False
    cache_hit: bool = False
    bucket_seconds: tuple[float, ...] = ()
    packets: int = 0  # packets simulated (0 for non-packet backends or cache hits)
    wall_seconds: float = 0.0  # wall time spent producing this answer
    details: dict = field(default_factory=dict, compare=False, hash=False)

    def replace(self, **changes) -> "CommResult":
        return dataclasses.replace(self, **changes)


@runtime_checkable
class CommModel(Protocol):
    name: str

    def iteration_comm_time(self, model: ModelProfile, placement: Placement) -> CommResult: ...

    def identity(self) -> dict:
        """JSON-serialisable description of every setting that can change an answer
        (backend name and version, algorithm, channels, transport...): cache-key material."""
        ...


def compute_seconds_on(model: ModelProfile, placement: Placement) -> float:
    """Iteration compute time on a placement: synchronous data parallelism waits for the slowest GPU."""
    return model.compute_seconds / placement.slowest_gpu_speed()


def overlap_with_backward(bucket_seconds: Sequence[float], ready_fractions: Sequence[float],
                          compute_seconds: float) -> float:
    """Exposed communication per iteration.

    Bucket i's all-reduce starts at max(its ready time in the backward pass,
    the end of bucket i-1) and takes bucket_seconds[i]; whatever runs past the
    end of compute is exposed."""
    end = 0.0
    for seconds, ready in zip(bucket_seconds, ready_fractions, strict=True):
        end = max(end, ready * compute_seconds) + seconds
    return max(0.0, end - compute_seconds)


def result_from_buckets(model: ModelProfile, placement: Placement, bucket_seconds: Sequence[float],
                        backend: str, **extra) -> CommResult:
    if placement.size == 1:
        bucket_seconds = [0.0] * len(model.buckets)
    compute = compute_seconds_on(model, placement)
    exposed = overlap_with_backward(bucket_seconds, [r for _, r in model.buckets], compute)
    return CommResult(exposed_seconds=exposed, collective_seconds=float(sum(bucket_seconds)), backend=backend,
                      bucket_seconds=tuple(float(s) for s in bucket_seconds), **extra)
