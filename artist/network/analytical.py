"""α-β model of the collective schedules: fast, no ns-3.

A schedule runs in lock-step steps. A step lasts as long as its slowest
transfer; a transfer takes its start-up latency (NCCL's per-step hardware
latency for its link kind) + the path's propagation and switch latency + the
time its most loaded link needs to carry every byte that crosses it in that
step. Each collective also pays NCCL's base latency once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass

import numpy as np

from artist.network.base import CommResult, result_from_buckets
from artist.network.collectives import Schedule, allreduce_schedule
from artist.network.links import NVLINK, link_bandwidth_bps, path
from artist.placement import Placement, placement_from_shape
from artist.topology import Topology
from artist.workload import ModelProfile

ANALYTICAL_VERSION = "1"


@dataclass(frozen=True)
class StartupLatency:
    """NCCL's latency model, Ring algorithm, Simple protocol (the one used for
    MB-sized gradient buckets). Source: NVIDIA/nccl src/graph/tuning.cc,
    v2.30.7-1: baseLat Ring/Simple 8.4 µs; hwLat Ring/Simple NVLink 3.4 µs,
    NET 14.0 µs (see calibration/data/SOURCES.md, nccl_tuning_tables.md)."""

    base_s: float = 8.4e-6  # once per collective
    nvlink_step_s: float = 3.4e-6  # per step whose slowest hop is NVLink
    net_step_s: float = 14.0e-6  # per step that crosses a NIC

    def per_step(self, kind: str) -> float:
        return self.nvlink_step_s if kind == NVLINK else self.net_step_s


def step_costs(schedule: Schedule, topology: Topology, latency: StartupLatency) -> list[list[tuple[float, float]]]:
    """Per step, each transfer's (fixed seconds, seconds per byte it must drain on its busiest link)."""
    gpu_of = schedule.ranks
    out = []
    seen: dict[tuple, list[tuple[float, float]]] = {}  # a ring repeats one step pattern 2(N-1) times
    for step in schedule.by_step():
        key = tuple((t.src, t.dst, t.nbytes) for t in step)
        if key not in seen:
            paths = [path(topology, gpu_of[t.src], gpu_of[t.dst]) for t in step]
            load: dict = defaultdict(float)
            for t, p in zip(step, paths):
                for link in p.links:
                    load[link] += t.nbytes
            drain = {link: 8.0 * b / link_bandwidth_bps(topology, link) for link, b in load.items()}
            seen[key] = [(latency.per_step(p.kind) + p.latency_s, max(drain[link] for link in p.links)) for p in paths]
        out.append(seen[key])
    return out


def schedule_seconds(schedule: Schedule, topology: Topology, latency: StartupLatency) -> float:
    """Time of one collective: base latency + the sum of its lock-step step times."""
    if not schedule.transfers:
        return 0.0
    return latency.base_s + sum(max(fixed + drain for fixed, drain in step)
                                for step in step_costs(schedule, topology, latency))


def _reference_bytes(placement: Placement, channels: int) -> int:
    """A payload that splits into exactly equal chunks for ring and hierarchical
    schedules (so every ring step is the same pattern and costs are exact per byte)."""
    return (1 << 20) * channels * placement.size

@dataclass(frozen=True)
class LinearCollective:
    """A collective's time as a function of its payload S:
    base + sum over steps of max over transfers (fixed + S x per_byte).
    The same schedule at any size differs only in chunk bytes, so one pass
    over it serves every bucket size."""

    base: float
    step_of: np.ndarray  # step index of each (fixed, per_byte) pair, sorted
    fixed: np.ndarray
    per_byte: np.ndarray
    step_starts: np.ndarray

    @classmethod
    def of(cls, schedule: Schedule, topology: Topology, latency: StartupLatency) -> "LinearCollective":
        steps = step_costs(schedule, topology, latency)
        pairs = [(k, fixed, drain / schedule.nbytes) for k, step in enumerate(steps) for fixed, drain in set(step)]
        pairs.sort()
        step_of = np.array([p[0] for p in pairs], dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, step_of[1:] != step_of[:-1]]) if len(pairs) else np.zeros(0, np.int64)
        return cls(latency.base_s if pairs else 0.0, step_of,
                   np.array([p[1] for p in pairs]), np.array([p[2] for p in pairs]), starts)

    def seconds(self, nbytes: float) -> float:
        if not len(self.fixed):
            return 0.0
        per_pair = self.fixed + nbytes * self.per_byte
        return float(self.base + np.maximum.reduceat(per_pair, self.step_starts).sum())


class AnalyticalModel:
    """CommModel backed by the α-β timing of collectives.py's schedules."""

    name = "analytical"

    def __init__(self, topology: Topology, algorithm: str = "ring", channels: int = 1,
                 latency: StartupLatency = StartupLatency()):
        self.topology = topology
        self.algorithm = algorithm
        self.channels = channels
        self.latency = latency
        self._memo: dict = {}

    def identity(self) -> dict:
        return {"backend": self.name, "version": ANALYTICAL_VERSION, "algorithm": self.algorithm,
                "channels": self.channels, "latency": asdict(self.latency)}

    def collective_seconds(self, placement: Placement, nbytes: int) -> float:
        """One all-reduce of nbytes on this placement. By symmetry of the
        topology the answer depends only on the placement's canonical shape."""
        shape = placement.canonical_shape
        linear = self._memo.get(shape)
        if linear is None:
            canonical = placement_from_shape(placement.topology, shape)
            schedule = allreduce_schedule(self.algorithm, canonical, _reference_bytes(canonical, self.channels), self.channels,
                                          dependencies=False)
            linear = self._memo[shape] = LinearCollective.of(schedule, placement.topology, self.latency)
        return linear.seconds(nbytes)

    def iteration_comm_time(self, model: ModelProfile, placement: Placement) -> CommResult:
        seconds = [self.collective_seconds(placement, b) for b, _ in model.buckets]
        return result_from_buckets(model, placement, seconds, self.name)

