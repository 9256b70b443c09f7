"""Spine load of running jobs: bytes each step puts on every spine link, and the links' utilisation.

A data-parallel step all-reduces the whole gradient over the job's GPUs (in
buckets; a ring moves bytes in proportion to the payload, so one all-reduce of
the total stands for the buckets, up to chunk rounding). Its transfers' routes
(links.py, with the ECMP plane of each channel) give the bytes per step on every
spine link (leaf uplink bundles or ports; with levels above the spine, their uplinks too);
divided by the step time, a rate. A
link's utilisation is the sum of the running jobs' rates over its capacity,
averaged over a step (bursts within a step are not seen). Independent of the
backend: it needs only the schedule, the routes and the step times.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping

from artist.network.collectives import collective_schedule
from artist.network.links import LinkId, is_uplink, link_bandwidth_bps, path
from artist.placement import Placement

def spine_bytes_per_step(placement: Placement, nbytes: int, algorithm: str = "ring",
                         channels: int = 1) -> dict[LinkId, float]:
    """Bytes an all-reduce of nbytes on `placement` puts on each spine link it crosses."""
    if placement.size < 2:
        return {}
    topology = placement.topology
    schedule = collective_schedule("all_reduce", algorithm, placement, int(nbytes), channels, dependencies=False)
    out: dict[LinkId, float] = defaultdict(float)
    for t in schedule.transfers:
        for link in path(topology, schedule.ranks[t.src], schedule.ranks[t.dst], t.channel).links:
            if is_uplink(link[0]):
                out[link] += t.nbytes
    return dict(out)


def graph_spine_bytes_per_step(graph, topology, algorithm: str = "ring", channels: int = 1) -> dict[LinkId, float]:
    """Bytes a step graph's communication nodes (each its collective's schedule) put on each spine link
    (hybrid-parallel jobs: DP all-reduces, pipeline sends, ... of every micro-batch); nodes inside one
    machine never reach the spine and are skipped."""
    out: dict[LinkId, float] = defaultdict(float)
    memo: dict[tuple, dict[LinkId, float]] = {}
    for node in graph.nodes:
        if not node.is_communication or len({topology.machine_of(g) for g in node.group}) < 2:
            continue
        key = (node.kind, node.group, node.nbytes)
        per_node = memo.get(key)
        if per_node is None:
            group = Placement(topology, tuple(sorted(node.group)))
            src_dst = tuple(node.group) if node.kind == "send_recv" else None
            schedule = collective_schedule(node.kind, algorithm, group, int(node.nbytes), channels,
                                           dependencies=False, src_dst=src_dst)
            per_node = memo[key] = defaultdict(float)
            for t in schedule.transfers:
                for link in path(topology, schedule.ranks[t.src], schedule.ranks[t.dst], t.channel).links:
                    if is_uplink(link[0]):
                        per_node[link] += t.nbytes
        for link, nbytes in per_node.items():
            out[link] += nbytes
    return dict(out)


def spine_utilisation(topology, loads: Mapping[str, tuple[Mapping[LinkId, float], float]]) -> dict[LinkId, float]:
    """Per spine link: sum over jobs of bytes per step / step seconds, over the link's capacity (bytes/s).
    loads: job -> (its bytes per step on each spine link, its step seconds)."""
    rate: dict[LinkId, float] = defaultdict(float)
    for job in sorted(loads):
        per_link, step = loads[job]
        for link in sorted(per_link):
            rate[link] += per_link[link] / step
    return {link: rate[link] / (link_bandwidth_bps(topology, link) / 8.0) for link in sorted(rate)}
