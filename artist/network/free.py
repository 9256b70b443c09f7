"""The `none` backend: communication costs nothing.

Every collective and send takes 0 s, so a step is its compute alone. This is the
network-less world most scheduling papers simulate (their simulators replay
profiled step times or ignore synchronisation): running a sweep with
`backend: none` first reproduces a paper's own baseline, and the difference to
any real backend is how much of a result the network accounts for (issue 21's
ablation). It is not a shortcut for anything: results record `none` as their
backend, and calibration never applies to it (there is nothing to correct).
"""

from __future__ import annotations

from typing import Mapping

from artist.network.base import CommResult, GraphTiming, time_node_by_node
from artist.parallel.graph import StepGraph
from artist.placement import Placement
from artist.topology import Topology

FREE_VERSION = 1


class FreeNetworkModel:
    """FabricModel in which every communication node takes zero seconds."""

    name = "none"

    def __init__(self, topology: Topology, algorithm: str = "ring", channels: int = 1):
        # algorithm and channels are accepted so every CommSpec builds; they change nothing here
        self.topology = topology
        self.algorithm = algorithm
        self.channels = channels

    def identity(self) -> dict:
        return {"backend": self.name, "version": FREE_VERSION}

    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        return 0.0

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        return {job: time_node_by_node(graph, lambda n: 0.0, CommResult(self.name)) for job, graph in graphs.items()}
