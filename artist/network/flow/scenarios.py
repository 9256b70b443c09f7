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


def _random_jobs(rng: random.Random, topology: Topology, jobs: int, sizes: tuple[int, ...], graph_of) -> dict:
    """Up to `jobs` jobs on disjoint GPUs drawn at random (a size from `sizes`, at most an even share of what
    is left; stop below 2 GPUs), each graph_of(gpus): job id -> StepGraph."""
    free = list(range(topology.gpus))
    rng.shuffle(free)
    graphs = {}
    for j in range(jobs):
        size = min(rng.choice(sizes), len(free) // (jobs - j))
        if size < 2:
            break
        gpus = tuple(sorted(free[:size]))
        del free[:size]
        graphs[f"j{j}"] = graph_of(gpus)
    return graphs


def contention_scenarios(count: int = 24, seed: int = 14, scale: int = 1) -> list[Scenario]:
    """`count` scenarios; scale multiplies every payload and compute time (the same placements)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        model, ratio = SPINES[i % len(SPINES)]
        topology = scenario_topology(model, ratio)
        graphs = _random_jobs(rng, topology, 2 + i % 7, (2, 4, 6, 8), lambda gpus: _graph(rng, gpus, scale))
        out.append(Scenario(f"s{i:02d}-{model}-{ratio:g}to1-{len(graphs)}jobs", topology, rng.choice((1, 2)),
                            graphs))
    return out


LARGE_SPINES = (("ecmp", 2.0), ("ecmp", 4.0), ("ecmp", 8.0), ("bundle", 4.0))


def large_scenario_topology(model: str, oversubscription: float) -> Topology:
    """8 racks x 4 machines x 2 GPUs, the same invented links as scenario_topology (so 8:1 leaves one
    port per rack on an ecmp spine)."""
    data = scenario_topology(model, oversubscription)
    return Topology.from_mapping({
        "name": f"contention-large-{model}-{oversubscription:g}to1", "racks": 8, "machines_per_rack": 4,
        "gpus_per_machine": 2, "gpu_type": "A100",
        "tiers": {name: {"bandwidth_gbps": t.bandwidth_bps / 1e9, "link_latency_us": t.link_latency_s * 1e6,
                         "switch_latency_us": t.switch_latency_s * 1e6, "source": t.source,
                         **({"oversubscription": oversubscription, "model": model} if name == "spine" else {})}
                  for name, t in (("machine", data.machine), ("rack", data.rack), ("spine", data.spine))},
    }, "<contention scenarios>")


def _moe_graph(rng: random.Random, gpus: tuple[int, ...], scale: int) -> StepGraph:
    """An MoE-like step: per layer, compute then an all-to-all dispatch and an all-to-all combine."""
    nodes: list[Node] = []
    previous: tuple[int, ...] = ()
    for _ in range(rng.choice((2, 3))):
        c = len(nodes)
        nodes.append(Node(c, "compute", deps=previous, seconds=rng.uniform(0.1e-3, 0.8e-3) * scale, group=gpus))
        nbytes = rng.choice((1, 2, 4)) * MIB * scale
        nodes.append(Node(c + 1, "all_to_all", deps=(c,), group=gpus, nbytes=nbytes))
        nodes.append(Node(c + 2, "all_to_all", deps=(c + 1,), group=gpus, nbytes=nbytes))
        previous = (c + 2,)
    return StepGraph(tuple(nodes))


def _pipeline_graph(rng: random.Random, gpus: tuple[int, ...], scale: int) -> StepGraph:
    """A 1F1B-like step of two stages (the first half of the GPUs, the second half) and m micro-batches:
    forward compute, activations sent stage to stage, backward compute, gradients sent back, then each
    stage's data-parallel all-reduce."""
    half = len(gpus) // 2
    first, second = gpus[:half], gpus[half:]
    micro = rng.choice((2, 4))
    forward = rng.uniform(0.05e-3, 0.3e-3) * scale
    activation = rng.choice((1, 2)) * MIB * scale // 2
    nodes: list[Node] = []
    last_first: tuple[int, ...] = ()
    last_second: tuple[int, ...] = ()
    for _ in range(micro):
        f = len(nodes)
        nodes.append(Node(f, "compute", deps=last_first, seconds=forward, group=first))
        sends = []
        for k in range(half):  # each first-stage GPU sends to its peer of the second stage
            nodes.append(Node(len(nodes), "send_recv", deps=(f,), group=(first[k], second[k]), nbytes=activation))
            sends.append(len(nodes) - 1)
        b = len(nodes)
        nodes.append(Node(b, "compute", deps=tuple(sends) + last_second, seconds=3 * forward, group=second))
        back = []
        for k in range(half):
            nodes.append(Node(len(nodes), "send_recv", deps=(b,), group=(second[k], first[k]), nbytes=activation))
            back.append(len(nodes) - 1)
        g = len(nodes)
        nodes.append(Node(g, "compute", deps=tuple(back), seconds=2 * forward, group=first))
        last_first, last_second = (g,), (b,)
    gradients = rng.choice((2, 4)) * MIB * scale
    if half > 1:
        nodes.append(Node(len(nodes), "all_reduce", deps=last_first, group=first, nbytes=gradients))
        nodes.append(Node(len(nodes), "all_reduce", deps=last_second, group=second, nbytes=gradients))
    return StepGraph(tuple(nodes))


def _large_graph(rng: random.Random, gpus: tuple[int, ...], scale: int) -> StepGraph:
    """A DDP-like step half the time, MoE-like a quarter, 1F1B-like a quarter."""
    kind = rng.random()
    if kind < 0.5:
        return _graph(rng, gpus, scale)
    if kind < 0.75:
        return _moe_graph(rng, gpus, scale)
    return _pipeline_graph(rng, gpus, scale)


def large_contention_scenarios(count: int = 24, seed: int = 29, scale: int = 1) -> list[Scenario]:
    """`count` larger scenarios on large_scenario_topology: 8-32 jobs of 2-8 GPUs at random over 8 racks,
    each step DDP-like (scenarios' _graph), MoE-like (_moe_graph) or 1F1B-like (_pipeline_graph), compute
    times drawn per job so that periods differ; spines ecmp 2:1, 4:1, 8:1 and bundle 4:1."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        model, ratio = LARGE_SPINES[i % len(LARGE_SPINES)]
        topology = large_scenario_topology(model, ratio)
        graphs = _random_jobs(rng, topology, (8, 12, 16, 24, 32)[i % 5], (2, 2, 4, 4, 6, 8),
                              lambda gpus: _large_graph(rng, gpus, scale))
        out.append(Scenario(f"L{i:02d}-{model}-{ratio:g}to1-{len(graphs)}jobs", topology, rng.choice((1, 2)),
                            graphs))
    return out
