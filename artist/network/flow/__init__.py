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

Accuracy against ns-3 co-simulation (window transport), measured with
benchmarks/contention_accuracy.py on its 24 scenarios (flow/scenarios.py),
error = flow / ns-3 - 1 of every job's shared step time:

    scenario                         ch GPUs slowdown ns3 slowdown flow median err max |err|
    s00-ecmp-1to1-2jobs               2    6        1.000         1.000     -9.34%    10.96%
    s01-ecmp-2to1-3jobs               1   10        1.395         1.448     -1.31%     2.73%
    s02-ecmp-4to1-4jobs               2   24        1.519         1.539     -1.98%    10.51%
    s03-bundle-1to1-5jobs             1   24        1.001         1.000     -1.17%     2.36%
    s04-bundle-4to1-6jobs             2   22        1.003         1.000     -3.60%     5.45%
    s05-ecmp-1to1-7jobs               2   31        1.571         1.533     -2.73%     7.97%
    s06-ecmp-2to1-8jobs               1   32        3.159         2.944     -3.82%    23.42%
    s07-ecmp-4to1-2jobs               1   10        2.222         1.601    -14.36%    29.78%
    s08-bundle-1to1-3jobs             2   12        1.000         1.000     -5.86%     6.27%
    s09-bundle-4to1-4jobs             2   12        1.149         1.182     -3.82%     5.24%
    s10-ecmp-1to1-5jobs               2   28        1.096         1.324     -2.26%     7.56%
    s11-ecmp-2to1-6jobs               2   22        1.083         1.255     +1.01%     5.58%
    s12-ecmp-4to1-7jobs               1   32        2.633         2.582     -6.11%    16.09%
    s13-bundle-1to1-8jobs             2   32        1.001         1.000     -2.55%     6.10%
    s14-bundle-4to1-2jobs             1    6        1.001         1.000     -1.02%     1.08%
    s15-ecmp-1to1-3jobs               2   18        1.004         1.000     -1.47%     2.23%
    s16-ecmp-2to1-4jobs               2   26        1.149         1.150     -3.31%     4.88%
    s17-ecmp-4to1-5jobs               2   30        2.762         2.240     +6.73%    31.75%
    s18-bundle-1to1-6jobs             2   19        1.001         1.000     -3.99%     6.48%
    s19-bundle-4to1-7jobs             1   30        1.693         1.769     -0.48%    10.92%
    s20-ecmp-1to1-8jobs               2   32        1.092         1.138     -0.33%    10.14%
    s21-ecmp-2to1-2jobs               1   10        1.000         1.000     -2.11%     2.82%
    s22-ecmp-4to1-3jobs               2   14        1.129         1.338     -2.10%     9.01%
    s23-bundle-1to1-4jobs             2   22        1.000         1.000     -4.00%     5.31%

    114 jobs in 24 scenarios: flow vs ns-3 shared step time, median |error| 2.99%, max |error| 31.75%
    slowdown (shared / alone): flow - ns-3, median |difference| 0.006, max 0.749
    wall seconds: flow 1.74, ns-3 8.46 (ns-3 / flow = 4.9; 2 cores shared with other work)

The median meets the goal (<= 5 %); the maximum does NOT (goal <= 15 %; with
payloads x8, --scale 8: median 1.0 %, max 39 %). The large errors are jobs
whose flows meet congested spine ports: ns-3's fixed-window transport shares
a congested FIFO port by window / round-trip time, so a flow crossing two
congested ports (longer queues, longer RTT) gets less than its max-min share
(measured: a 2-GPU job sharing one port forward and two ports backward got
~35 % of the port in ns-3, 50 % here), and every connection keeps up to a
window (1 MiB) queued at the port, a queueing delay a fluid model does not
have. Max-min is the ideal congestion control; real fabrics (credit-based
InfiniBand, DCQCN RoCE) sit between the two.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Mapping

from artist.network.analytical import StartupLatency
from artist.network.base import CommResult, GraphTiming
from artist.network.collectives import ALGORITHMS, Schedule, collective_schedule
from artist.errors import InputError
from artist.network.flow.engine import MAX_TRANSFERS, Sharing, run_graphs
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
                 latency: StartupLatency = StartupLatency(), sharing: str = "maxmin", window_bytes: int = 1 << 20,
                 mtu: int = 9000, ack_every: int = 8):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
        if channels < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        self.topology = topology
        self.algorithm = algorithm
        self.channels = channels
        self.latency = latency
        self.sharing = Sharing(sharing, window_bytes, mtu, ack_every)
        self._schedules: dict = {}
        self._memo: dict = {}

    def identity(self) -> dict:
        return {"backend": self.name, "version": FLOW_VERSION, "algorithm": self.algorithm,
                "channels": self.channels, "latency": asdict(self.latency), "contention": True,
                "sharing": asdict(self.sharing)}

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

    def _check_size(self, graphs: Mapping[str, StepGraph]) -> None:
        """Refuse, before building anything, a question whose schedules would exceed MAX_TRANSFERS
        (an upper bound per node: channels x n x max(2(n-1), n-1) transfers for n GPUs)."""
        total = 0
        for graph in graphs.values():
            for node in graph.nodes:
                if node.is_communication:
                    n = len(node.group)
                    total += self.channels * n * max(2 * (n - 1), 1)
        if total > MAX_TRANSFERS:
            raise InputError("flow backend", None,
                             f"these step graphs would need up to {total} transfers in one run, more than the "
                             f"flow model's limit of {MAX_TRANSFERS}: use fewer channels, fewer GPUs per job, or "
                             f"the analytical backend")

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        started = time.perf_counter()
        self._check_size(graphs)
        jobs = list(graphs)
        run = run_graphs(self.topology, [graphs[j] for j in jobs], self._schedule, self.latency, self.sharing)
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
