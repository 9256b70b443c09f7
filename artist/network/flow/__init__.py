"""Fluid FabricModel: several jobs' step graphs co-simulated with max-min fair link sharing.

    FlowModel(topology, algorithm="ring", channels=1).time({job: StepGraph, ...})

Every graph of one call runs from a common start on the same links
(engine.py); each job's node durations, and so its step, are read from its own
graph. One entry is a job alone. Fast enough for sweeps where ns-3 is not
(no packets: one rate computation per flow start or drain), and validated
against ns-3 co-simulation by benchmarks/contention_accuracy.py.

What it leaves out (so differs from ns-3): packets, queues and window/ack
dynamics (a flow takes its max-min share at once), the serialisation of the
last frame on each hop, and transport start-up; the latencies it charges are
the analytical model's (NCCL base + per-hop alpha + path latency).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Mapping

from artist.network.analytical import StartupLatency
from artist.network.base import CommResult, GraphTiming
from artist.network.collectives import ALGORITHMS, Schedule, collective_schedule
from artist.network.flow.engine import run_graphs
from artist.network.symmetry import fabric_form, fabric_key
from artist.parallel.graph import Node, StepGraph
from artist.placement import Placement
from artist.topology import Topology

FLOW_VERSION = "1"  # bump when an answer changes

__all__ = ["FlowModel", "FLOW_VERSION"]


class FlowModel:
    """FabricModel backed by the fluid max-min co-simulation of engine.py."""

    name = "flow"

    def __init__(self, topology: Topology, algorithm: str = "ring", channels: int = 1,
                 latency: StartupLatency = StartupLatency()):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
        if channels < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        self.topology = topology
        self.algorithm = algorithm
        self.channels = channels
        self.latency = latency
        self._schedules: dict = {}
        self._memo: dict = {}

    def identity(self) -> dict:
        return {"backend": self.name, "version": FLOW_VERSION, "algorithm": self.algorithm,
                "channels": self.channels, "latency": asdict(self.latency), "contention": True}

    def _schedule(self, node: Node) -> Schedule:
        key = (node.kind, node.group, node.nbytes)
        found = self._schedules.get(key)
        if found is None:
            group = Placement(self.topology, node.group)
            src_dst = tuple(node.group) if node.kind == "send_recv" else None
            found = collective_schedule(node.kind, self.algorithm, group, int(node.nbytes), self.channels,
                                        src_dst=src_dst)
            if len(self._schedules) > 4096:
                self._schedules.clear()
            self._schedules[key] = found
        return found

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        started = time.perf_counter()
        jobs = list(graphs)
        run = run_graphs(self.topology, [graphs[j] for j in jobs], self._schedule, self.latency)
        wall = time.perf_counter() - started
        out = {}
        for gi, job in enumerate(jobs):
            graph = graphs[job]
            seconds = [e - s if n.is_communication else n.seconds
                       for n, s, e in zip(graph.nodes, run.node_start[gi], run.node_end[gi])]
            details = {"jobs": len(jobs), "transfers": run.transfers, "rate_updates": run.rate_updates,
                       "simulated_end_seconds": max(run.node_end[gi], default=0.0)}
            out[job] = GraphTiming.of(graph, seconds, CommResult(self.name, wall_seconds=wall, details=details))
        return out

    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        """One collective alone; by the fabric's symmetry it depends only on the group's form."""
        key = (kind, fabric_key(group), int(nbytes))
        if key not in self._memo:
            canonical = fabric_form(group)[1]
            node = Node(0, kind, group=canonical.gpus, nbytes=int(nbytes))
            self._memo[key] = self.time({"c": StepGraph((node,))})["c"].node_seconds[0]
        return self._memo[key]
