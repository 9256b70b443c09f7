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


def schedule_seconds(schedule: Schedule, topology: Topology, latency: StartupLatency) -> float:
    """Time of one collective: base latency + the sum of its lock-step step times."""
    if not schedule.transfers:
        return 0.0
    total = latency.base_s
    gpu_of = schedule.ranks
    for step in schedule.by_step():
        paths = [path(topology, gpu_of[t.src], gpu_of[t.dst]) for t in step]
        load: dict = defaultdict(float)
        for t, p in zip(step, paths):
            for link in p.links:
                load[link] += t.nbytes
        drain = {link: 8.0 * b / link_bandwidth_bps(topology, link) for link, b in load.items()}
        total += max(
            latency.per_step(p.kind) + p.latency_s + max(drain[link] for link in p.links)
            for p in paths
        )
    return total


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
        key = (placement.canonical_shape, int(nbytes))
        if key not in self._memo:
            canonical = placement_from_shape(placement.topology, placement.canonical_shape)
            schedule = allreduce_schedule(self.algorithm, canonical, int(nbytes), self.channels)
            self._memo[key] = schedule_seconds(schedule, placement.topology, self.latency)
        return self._memo[key]

    def iteration_comm_time(self, model: ModelProfile, placement: Placement) -> CommResult:
        seconds = [self.collective_seconds(placement, b) for b, _ in model.buckets]
        return result_from_buckets(model, placement, seconds, self.name)

