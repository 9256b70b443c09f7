"""The question every network backend answers, and the shape of its answers.

    FabricModel.time({job_id: StepGraph}) -> {job_id: GraphTiming}

A step graph (artist/parallel/graph.py) says what one training step does:
compute nodes, collectives over GPU groups, sends. A backend gives every
communication node a duration; the graph's critical path then gives the step's
timeline. Several graphs in one call are steps of jobs running at once (one
entry: the job alone). Every backend (analytical, ns-3) and wrapper (Cached,
Calibrated) answers through this protocol, so callers never know which one did.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol, Sequence, runtime_checkable

from artist.parallel.graph import StepGraph, schedule_graph
from artist.placement import Placement


@dataclass(frozen=True)
class CommResult:
    """Where an answer came from (provenance; the numbers are in GraphTiming)."""

    backend: str
    calibrated: bool = False
    cache_hit: bool = False
    packets: int = 0  # packets simulated (0 for non-packet backends or cache hits)
    wall_seconds: float = 0.0  # wall time spent producing this answer
    details: dict = field(default_factory=dict, compare=False, hash=False)

    def replace(self, **changes) -> "CommResult":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class GraphTiming:
    """One graph's timeline: every node's duration and end, measured from the step's start."""

    node_seconds: tuple[float, ...]
    node_end: tuple[float, ...]
    comm_seconds: float  # sum of the communication nodes' own durations, in node order
    result: CommResult

    @property
    def step_seconds(self) -> float:
        """Makespan of the graph: compute + exposed communication."""
        return max(self.node_end, default=0.0)

    @classmethod
    def of(cls, graph: StepGraph, node_seconds: Sequence[float], result: CommResult) -> "GraphTiming":
        schedule = schedule_graph(graph, node_seconds)
        comm = sum(s for n, s in zip(graph.nodes, schedule.node_seconds) if n.is_communication)
        return cls(schedule.node_seconds, schedule.node_end, float(comm), result)

    def replace(self, **changes) -> "GraphTiming":
        return dataclasses.replace(self, **changes)


@runtime_checkable
class FabricModel(Protocol):
    name: str

    def identity(self) -> dict:
        """JSON-serialisable description of every setting that can change an answer
        (backend name and version, algorithm, channels, transport...): cache-key material."""
        ...

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        """Steps of jobs running at once on the fabric; one entry = a job alone."""
        ...

    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        """One collective alone on `group` (send_recv: lowest GPU id to the other one)."""
        ...


def time_node_by_node(graph: StepGraph, seconds_of: Callable, result: CommResult) -> GraphTiming:
    """Time a graph whose communication nodes a backend can time one by one, in isolation:
    seconds_of(node) for every communication node, compute nodes their own seconds."""
    durations = [seconds_of(n) if n.is_communication else n.seconds for n in graph.nodes]
    return GraphTiming.of(graph, durations, result)


def fabric_setting(fabric, name: str, default):
    """A backend setting (algorithm, channels) read through the Cached / Calibrated wrappers."""
    while fabric is not None:
        if hasattr(fabric, name):
            return getattr(fabric, name)
        fabric = getattr(fabric, "inner", None)
    return default
