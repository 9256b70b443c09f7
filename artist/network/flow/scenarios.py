"""Contention scenarios on which the flow backend is validated against ns-3 co-simulation.

Used by benchmarks/contention_accuracy.py (the full table) and a test (a few of
them). Everything here is invented for the comparison (a small fabric with
round figures, random placements and step graphs from a fixed seed); it stands
for no real cluster.

The fabric: 4 racks x 4 machines x 2 GPUs, NVSwitch 2400 Gb/s, NICs and spine
ports at 100 Gb/s (so one flow fills one port and ECMP collisions show), the
latencies of tests/conftest.py; spines ``ecmp`` at 1:1, 2:1 and 4:1 (8, 4, 2
ports per rack) and ``bundle`` at 1:1 and 4:1.
Jobs: 2-8 per scenario, 2-8 GPUs each, spread over racks at random; a step is
either one ring all-reduce or a DDP-like graph (a compute node and 2-3 gradient
buckets all-reduced as they become ready, one after another).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from artist.parallel.graph import Node, StepGraph
from artist.topology import Topology

MIB = 1 << 20
SPINES = (("ecmp", 1.0), ("ecmp", 2.0), ("ecmp", 4.0), ("bundle", 1.0), ("bundle", 4.0))


@dataclass(frozen=True)
class Scenario:
    name: str
    topology: Topology
    channels: int
    graphs: dict  # job id -> StepGraph


def scenario_topology(model: str, oversubscription: float) -> Topology:
    def tier(gbps, link_us, switch_us):
        return {"bandwidth_gbps": gbps, "link_latency_us": link_us, "switch_latency_us": switch_us,
                "source": "invented round figures for the flow-vs-ns-3 comparison"}

    return Topology.from_mapping({
        "name": f"contention-{model}-{oversubscription:g}to1", "racks": 4, "machines_per_rack": 4,
        "gpus_per_machine": 2, "gpu_type": "A100",
        "tiers": {"machine": tier(2400, 0.005, 0.1), "rack": tier(100, 0.01, 0.13),
                  "spine": {**tier(100, 0.15, 0.5), "oversubscription": oversubscription, "model": model}},
    }, "<contention scenarios>")


def _graph(rng: random.Random, gpus: tuple[int, ...], scale: int) -> StepGraph:
    if rng.random() < 0.5:
        return StepGraph((Node(0, "all_reduce", group=gpus, nbytes=rng.choice((2, 4, 8)) * MIB * scale),))
    compute = rng.uniform(0.2e-3, 1.5e-3) * scale
    nodes = [Node(0, "compute", seconds=compute, group=gpus)]
    previous: tuple[int, ...] = ()
    buckets = rng.choice((2, 3))
    for b in range(buckets):
        timer = len(nodes)
        nodes.append(Node(timer, "compute", seconds=compute * (b + 1) / buckets, group=gpus))
        nodes.append(Node(timer + 1, "all_reduce", deps=(timer,) + previous, group=gpus,
                          nbytes=rng.choice((1, 2, 4)) * MIB * scale))
        previous = (timer + 1,)
    return StepGraph(tuple(nodes))


def contention_scenarios(count: int = 24, seed: int = 14, scale: int = 1) -> list[Scenario]:
    """`count` scenarios; scale multiplies every payload and compute time (the same placements)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        model, ratio = SPINES[i % len(SPINES)]
        topology = scenario_topology(model, ratio)
        free = list(range(topology.gpus))
        rng.shuffle(free)
        jobs = 2 + i % 7  # 2..8 jobs
        graphs = {}
        for j in range(jobs):
            size = min(rng.choice((2, 4, 6, 8)), len(free) // (jobs - j))
            if size < 2:
                break
            gpus = tuple(sorted(free[:size]))
            del free[:size]
            graphs[f"j{j}"] = _graph(rng, gpus, scale)
        out.append(Scenario(f"s{i:02d}-{model}-{ratio:g}to1-{len(graphs)}jobs", topology, rng.choice((1, 2)),
                            graphs))
    return out
