"""What one collective asks of the links: one flow per edge (sender, receiver, channel).

A collective's schedule (collectives.py) moves bytes over edges: a ring's rank
to its successor, per channel; an all-to-all's every pair; a send/recv's one
pair. Each edge is one *bundle* here: its bytes over the whole collective
(`edge_bytes`), at one rate, on the links of its route (load 1 on each). Edges
drain independently: a ring's chunks queue between its edges, so an edge slowed
on a shared link for a while catches up later instead of holding the whole ring
to its slowest instant (the per-transfer flow engine's and ns-3's behaviour; one
lock-step bundle per channel, this model until 2026-11-27, overstated the
slowdown of rings across several shared uplinks by up to 54 %, against 34 % so:
network/phase/__init__.py). model.contended_phase merges edges that cross the
same shared links alike into one bundle, so a ring costs a bundle per distinct
set of shared links it crosses, not one per edge. Each edge also names its feeder (the edge into its
sender on its channel: a ring's previous edge), which decides whether its hop latency can hide behind
its bytes when slowed (model.contended_phase).

A collective alone takes its fabric's time T (analytical, flow, ns-3, with
calibration). Its bundles alone run at the max-min rates of its own links
(`alone_rates`, max-min fair per edge), taking B = max over bundles of
edge_bytes / rate: the bandwidth part. The rest, T - B, is start-up latency (NCCL's base and per-hop
latencies, packet overheads) during which the links carry nothing of it. When
the fabric's T is below B (a calibration faster than the fluid links), the
bundles carry the fraction T / B of their bytes instead, so that alone the
collective still takes exactly T and never loads a link beyond its capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from artist.network.analytical import StartupLatency
from artist.network.collectives import collective_schedule
from artist.network.flow.maxmin import max_min_rates
from artist.network.links import LinkId, link_bandwidth_bps, path
from artist.placement import Placement
from artist.topology import Topology


@dataclass(frozen=True)
class Bundle:
    """One edge of a collective (several alike, once merged: load counts them)."""

    edge_bytes: float  # bytes per edge over the whole collective
    links: tuple[LinkId, ...]  # every link its route crosses
    load: tuple[float, ...]  # per link: edges crossing it (bytes it carries / edge_bytes)


@dataclass(frozen=True)
class CollectiveDemand:
    bundles: tuple[Bundle, ...]
    alone_rates: tuple[float, ...]  # per bundle, bytes/s per edge with only this collective on its links
    first_hop_seconds: float = 0.0  # NCCL's base latency + the slowest hop's alpha and path latency
    burst_rates: tuple[float, ...] = ()  # per bundle, bytes/s per edge with only its own channel on its links
    hop_seconds: tuple[float, ...] = ()  # per bundle, its hop's start-up latency (alpha + path latency)
    rounds: tuple[int, ...] = ()  # per bundle, its edge's transfers; 0: its latency stays hidden when slowed
    feeders: tuple[int, ...] = ()  # per bundle, the bundle feeding its sender (same channel, into its src), -1 none

    @property
    def bandwidth_seconds(self) -> float:
        """The bandwidth part alone: the slowest bundle's bytes at its alone rate."""
        return max((b.edge_bytes / r for b, r in zip(self.bundles, self.alone_rates)), default=0.0)


def collective_demand(topology: Topology, kind: str, group: tuple[int, ...], nbytes: int, algorithm: str,
                      channels: int, latency: StartupLatency = StartupLatency()) -> CollectiveDemand:
    """The bundles of one collective on these GPUs (send_recv: group = (src, dst)) and their alone rates."""
    placement = Placement(topology, group)
    src_dst = tuple(group) if kind == "send_recv" else None
    schedule = collective_schedule(kind, algorithm, placement, int(nbytes), channels, dependencies=False,
                                   src_dst=src_dst)
    table = schedule.table
    if len(table) == 0:
        return CollectiveDemand((), ())
    n = len(schedule.ranks)
    edge = (table.channel * n + table.src) * n + table.dst
    edges, inverse = np.unique(edge, return_inverse=True)
    edge_bytes = np.bincount(inverse, weights=table.nbytes.astype(np.float64), minlength=len(edges))
    transfers = np.bincount(inverse, minlength=len(edges))
    bundles, ends, hops, rounds = [], [], [], []  # ends: (channel, src, dst) per bundle
    first_hop = 0.0
    for e, b, k in zip(edges.tolist(), edge_bytes.tolist(), transfers.tolist()):
        if b > 0:
            channel, rest = divmod(e, n * n)
            src, dst = divmod(rest, n)
            route = path(topology, schedule.ranks[src], schedule.ranks[dst], channel)
            hops.append(latency.per_step(route.kind) + route.latency_s)
            first_hop = max(first_hop, hops[-1])
            bundles.append(Bundle(b, tuple(route.links), (1.0,) * len(route.links)))
            ends.append((channel, src, dst))
            rounds.append(int(k))
    rates = alone_rates(topology, bundles)
    return CollectiveDemand(tuple(bundles), rates, latency.base_s + first_hop, _burst_rates(topology, bundles, ends),
                            tuple(hops), _rounds_shown(ends, rates, rounds), _feeders(ends))


def _burst_rates(topology: Topology, bundles: list[Bundle], ends: list[tuple]) -> tuple[float, ...]:
    """Per bundle, its max-min rate with only its own channel's edges on its links."""
    out = [0.0] * len(bundles)
    for channel in dict.fromkeys(c for c, _, _ in ends):
        own = [k for k, (c, _, _) in enumerate(ends) if c == channel]
        for k, rate in zip(own, alone_rates(topology, [bundles[k] for k in own])):
            out[k] = rate
    return tuple(out)


def _rounds_shown(ends: list[tuple], rates: tuple[float, ...], rounds: list[int]) -> tuple[int, ...]:
    """The rounds, 0 for an edge whose feeding edge (into its sender, same channel; a ring's previous
    edge) is faster alone: that edge hands it its next chunk early, so when this edge is slowed its next
    chunk is ready and its hop latency stays hidden (model.burst_terms)."""
    into = {(channel, dst): rate for (channel, _, dst), rate in zip(ends, rates)}
    return tuple(k if into.get((channel, src), rate) <= rate * (1 + 1e-9) else 0
                 for (channel, src, _), rate, k in zip(ends, rates, rounds))


def _feeders(ends: list[tuple]) -> tuple[int, ...]:
    """Per bundle, the index of the bundle whose edge delivers to its sender on its channel (a ring's
    previous edge), -1 where none or several do (an all-to-all's edges have no one feeder)."""
    into: dict[tuple, int] = {}
    for k, (channel, _, dst) in enumerate(ends):
        into[(channel, dst)] = -1 if (channel, dst) in into else k
    return tuple(into.get((channel, src), -1) for channel, src, _ in ends)


def alone_rates(topology: Topology, bundles) -> tuple[float, ...]:
    """Max-min rates (bytes/s per edge) of these bundles sharing their links with nothing else."""
    index: dict[LinkId, int] = {}
    flow_of, link_of, load = [], [], []
    for f, bundle in enumerate(bundles):
        for link, m in zip(bundle.links, bundle.load):
            flow_of.append(f)
            link_of.append(index.setdefault(link, len(index)))
            load.append(m)
    capacity = np.array([link_bandwidth_bps(topology, link) / 8.0 for link in index])
    rates = max_min_rates(np.array(flow_of), np.array(link_of), len(bundles), capacity,
                          multiplicity=np.array(load))
    return tuple(float(r) for r in rates)
