"""α-β model of the collective schedules: fast, no ns-3.

Time of one collective = NCCL's base latency
  + the latency chain: the longest path through the schedule's dependency
    graph when every transfer costs only its start-up latency (NCCL's per-hop
    hardware latency for its link kind) and its path's propagation and switch
    latency. In a ring this is one chunk's journey: 2(N-1) hops, of which only
    those that leave a machine pay the NIC latency;
  + the bandwidth term: per step, the time the busiest link needs to carry
    every byte that crosses it in that step, summed over steps.

This is NCCL's own composition (src/graph/tuning.cc: base + intra-node hops x
NVLink latency + inter-node hops x NET latency, plus size / bandwidth). It
matches measurements: for 2 x 8 H100 the measured small-size all-reduce floor
is ~123 µs (gcp_a3mega log), where charging the NIC latency on all 30 lock-step
steps would give ~430 µs.

Algorithm ``nccl``: all-reduces, all-gathers and reduce-scatters take the algorithm, protocol and channel
count NCCL's own tuner picks at each size, and the time it predicts for them (artist/network/nccl/: its
cost model with release 2.30.7's constants, fed by a simplified topology search of the placement's
machines, NICs and NVLink); all-to-alls and send/recvs, point-to-point in NCCL, keep their ring-ordered
schedules. The fabric above the NICs is the tuner's: one collective alone never fills it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Mapping

import numpy as np

from artist.network.base import CommResult, GraphTiming, time_node_by_node
from artist.network.collectives import NCCL_CHOICE, Schedule, channel_ring, collective_schedule
from artist.network.links import NVLINK, link_bandwidth_bps, path
from artist.memo import memoised
from artist.network.nccl.chosen import TUNED_KINDS, NcclChosen
from artist.network.nccl.fabric import inputs_of, machine_of
from artist.network.nccl.releases import V2_30_7
from artist.network.symmetry import fabric_form
from artist.placement import Placement
from artist.parallel.graph import StepGraph
from artist.topology import Topology

ANALYTICAL_VERSION = "2"  # bump when an answer changes (calibration profiles record it)
MAX_GROUPS = 100_000  # groups whose linear form time() keeps (a bound on memory, not a tuning)


@dataclass(frozen=True)
class StartupLatency:
    """NCCL's latency model, Ring algorithm, Simple protocol (the one used for
    MB-sized gradient buckets). Source: NVIDIA/nccl src/graph/tuning.cc,
    v2.30.7-1: baseLat Ring/Simple 8.4 µs; hwLat Ring/Simple NVLink 3.4 µs,
    NET 14.0 µs (see calibration/data/SOURCES.md, nccl_tuning_tables.md)."""

    base_s: float = 8.4e-6  # once per collective
    nvlink_step_s: float = 3.4e-6  # per hop over NVLink
    net_step_s: float = 14.0e-6  # per hop that crosses a NIC

    def per_step(self, kind: str) -> float:
        return self.nvlink_step_s if kind == NVLINK else self.net_step_s


def latency_chain_seconds(schedule: Schedule, topology: Topology, latency: StartupLatency) -> float:
    """Longest start-up-latency path through the dependency graph (bytes ignored).

    A transfer may start once its sender has received what it forwards (the
    sender's latest receive in the same channel, collectives.py's rule)."""
    gpu_of = schedule.ranks
    weight: dict[tuple[int, int], float] = {}
    ready: dict[tuple[int, int], float] = {}  # (rank, channel) -> latency time of its latest receive
    for step in schedule.by_step():
        arrivals: dict[tuple[int, int], float] = {}
        for t in step:
            w = weight.get((t.src, t.dst))
            if w is None:
                p = path(topology, gpu_of[t.src], gpu_of[t.dst])
                w = weight[(t.src, t.dst)] = latency.per_step(p.kind) + p.latency_s
            key = (t.dst, t.channel)
            arrivals[key] = max(arrivals.get(key, 0.0), ready.get((t.src, t.channel), 0.0) + w)
        ready.update(arrivals)
    return max(ready.values(), default=0.0)


def bandwidth_seconds(schedule: Schedule, topology: Topology) -> float:
    """Sum over steps of the busiest link's bytes / bandwidth in that step. Read from the schedule's columns,
    each connection's route found once (a route depends on its ends and channel only)."""
    gpu_of = schedule.ranks
    table = schedule.table
    src, dst, nbytes, channel = (table.src.tolist(), table.dst.tolist(), table.nbytes.tolist(),
                                 table.channel.tolist())
    rows_of_step: list[list[int]] = [[] for _ in range(schedule.steps)]
    for i, k in enumerate(table.step.tolist()):
        rows_of_step[k].append(i)
    routes: dict[tuple[int, int, int], tuple] = {}
    seen: dict[tuple, float] = {}  # a ring repeats one step pattern 2(N-1) times
    total = 0.0
    for rows in rows_of_step:
        key = tuple((src[i], dst[i], nbytes[i], channel[i]) for i in rows)
        if key not in seen:
            load: dict = defaultdict(float)
            for i in rows:
                ends = (src[i], dst[i], channel[i])
                links = routes.get(ends)
                if links is None:
                    links = routes[ends] = path(topology, gpu_of[src[i]], gpu_of[dst[i]], channel[i]).links
                for link in links:
                    load[link] += nbytes[i]
            seen[key] = max(8.0 * b / link_bandwidth_bps(topology, link) for link, b in load.items())
        total += seen[key]
    return total


def schedule_seconds(schedule: Schedule, topology: Topology, latency: StartupLatency) -> float:
    """Time of one collective: base + latency chain + bandwidth term."""
    if not schedule.transfers:
        return 0.0
    return latency.base_s + latency_chain_seconds(schedule, topology, latency) + bandwidth_seconds(schedule, topology)


def _reference_bytes(placement: Placement, channels: int) -> int:
    """A payload that splits into exactly equal chunks for ring and hierarchical
    schedules (so every ring step is the same pattern and costs are exact per byte)."""
    return (1 << 20) * channels * placement.size


@dataclass(frozen=True)
class LinearCollective:
    """A collective's time as a function of its payload S: fixed + S x per_byte.
    The same schedule at any size differs only in chunk bytes, so one pass over
    it serves every bucket size."""

    fixed: float
    per_byte: float

    @classmethod
    def of(cls, schedule: Schedule, topology: Topology, latency: StartupLatency) -> "LinearCollective":
        if not schedule.transfers:
            return cls(0.0, 0.0)
        fixed = latency.base_s + latency_chain_seconds(schedule, topology, latency)
        return cls(fixed, bandwidth_seconds(schedule, topology) / schedule.nbytes)

    def seconds(self, nbytes: float) -> float:
        return self.fixed + nbytes * self.per_byte if self.per_byte else 0.0


def ring_allreduce_linear(placement: Placement, channels: int, latency: StartupLatency) -> LinearCollective:
    """LinearCollective.of(ring all-reduce schedule at _reference_bytes) without building the
    schedule: at that payload every one of the 2(N-1) steps moves one 1 MiB chunk along each
    channel's ring, so one step's link loads and the ring's hop weights are all it takes. The
    float operations are the generic path's, in the same order (bit-identical; a test checks),
    and the cost is O(steps x ranks) float additions instead of O(steps x ranks) objects."""
    topology = placement.topology
    order = placement.ranks_in_ring_order()
    n = len(order)
    if n < 2:
        return LinearCollective(0.0, 0.0)
    rank_of = {g: i for i, g in enumerate(order)}
    rings = [channel_ring(placement, rank_of, c) for c in range(channels)]
    chunk = 1 << 20
    weight: dict[tuple[int, int], float] = {}
    load: dict = defaultdict(float)
    hops = []  # per channel: [(src rank, dst rank, weight)] around the ring
    for c, ring in enumerate(rings):
        channel_hops = []
        for p in range(n):
            src, dst = ring[p], ring[(p + 1) % n]
            route = path(topology, order[src], order[dst], c)
            w = weight.get((src, dst))
            if w is None:
                w = weight[(src, dst)] = latency.per_step(route.kind) + route.latency_s
            channel_hops.append((src, dst, w))
            for link in route.links:
                load[link] += chunk
        hops.append(channel_hops)
    steps = 2 * (n - 1)
    # Latency chain: every step each rank of each channel's ring receives once, from its ring
    # predecessor, at the predecessor's latest receive + the hop's weight (a rank that has received
    # nothing yet counts 0.0). After `steps` steps the rank at ring position i has therefore received
    # ((0 + w_{i-steps+1}) + w_{i-steps+2}) + ... + w_i, w_j the weight of the hop into position j
    # (indices mod n): a left fold, which cumsum along a row performs in exactly that order (sequential,
    # not pairwise), so the result is the generic walk's to the last bit, in one array operation per
    # channel instead of one per step.
    ends = []
    window = (np.arange(n)[:, None] - steps + 1 + np.arange(steps)[None, :]) % n
    for channel_hops in hops:
        into = np.empty(n)
        into[[(p + 1) % n for p in range(n)]] = [h[2] for h in channel_hops]  # hop p enters position p + 1
        ends.append(np.cumsum(into[window], axis=1)[:, -1].max())
    ready_max = max(ends)
    per_step = max(8.0 * b / link_bandwidth_bps(topology, link) for link, b in load.items())
    total = 0.0
    for _ in range(steps):
        total += per_step
    return LinearCollective(latency.base_s + float(ready_max), total / _reference_bytes(placement, channels))


class TreeCollective:
    """NCCL's Tree all-reduce on one placement (artist/network/tree.py) as a function of its size: NCCL's base
    latency + the tree's latency path (up to the root and down to the farthest leaf, one chunk's journey:
    the pipeline hides the rest) + per lock-step step the busiest link's chunk bytes over its bandwidth.
    Its chunk count grows with the size (512 KiB chunks), so the time is not one line: with unit chunks
    the steps' sum B(K) is computed for small counts, and from the count at which every transfer is in
    flight in the pipeline's middle (2 x height + 1) it grows by the same middle step per chunk."""

    def __init__(self, placement: Placement, channels: int, latency: StartupLatency):
        from artist.network.tree import channel_trees

        self.placement, self.channels = placement, channels
        trees = channel_trees(placement, channels)
        self.full = 2 * max(t.height[t.root] for t in trees) + 1
        self._sums: dict[int, float] = {}
        self.fixed = latency.base_s + max(_tree_latency(placement, t, latency) for t in trees)

    def _sum(self, chunks: int) -> float:
        """Σ over steps of the busiest link's seconds per byte, every chunk one byte (B(K) above)."""
        from artist.network.tree import tree_allreduce

        if chunks > self.full + 1:
            first, second = self._sum(self.full), self._sum(self.full + 1)
            return first + (chunks - self.full) * (second - first)
        found = self._sums.get(chunks)
        if found is None:
            unit = tree_allreduce(self.placement, chunks * self.channels, self.channels, dependencies=False,
                                  chunk_bytes=1)
            found = self._sums[chunks] = bandwidth_seconds(unit, self.placement.topology)
        return found

    def seconds(self, nbytes: float) -> float:
        from artist.network.tree import tree_chunks

        if nbytes <= 0 or self.placement.size < 2:
            return 0.0
        share = math.ceil(nbytes / self.channels)  # the largest channel's share
        chunks = tree_chunks(share)
        return self.fixed + share / chunks * self._sum(chunks)


def _tree_latency(placement: Placement, tree, latency: StartupLatency) -> float:
    """The longest start-up-latency path of one chunk up a channel's tree to its root and down to a leaf."""
    order = placement.ranks_in_ring_order()

    def weight(a: int, b: int) -> float:
        p = path(placement.topology, order[a], order[b])
        return latency.per_step(p.kind) + p.latency_s

    up = [0.0] * len(order)
    for r in reversed(tree.order):
        up[r] = max((up[c] + weight(c, r) for c in tree.children[r]), default=0.0)
    down = [0.0] * len(order)
    down[tree.root] = up[tree.root]
    for r in tree.order:
        for c in tree.children[r]:
            down[c] = down[r] + weight(r, c)
    return max(down)


class AnalyticalModel:
    """FabricModel backed by the α-β timing of collectives.py's schedules; every job
    is timed alone (no contention between graphs: identity says so)."""

    name = "analytical"

    def __init__(self, topology: Topology, algorithm: str = "ring", channels: int = 1,
                 latency: StartupLatency = StartupLatency()):
        if algorithm == NCCL_CHOICE and channels != 1:
            raise ValueError(f"algorithm {NCCL_CHOICE}: NCCL's own search sets the channels; leave channels at 1, "
                             f"not {channels}")
        self.topology = topology
        self.algorithm = algorithm
        self.channels = channels
        self.latency = latency
        self._memo: dict = {}
        self._by_group: dict = {}  # (kind, GPUs) -> LinearCollective (time(): _linear without its fabric form)

    def identity(self) -> dict:
        identity = {"backend": self.name, "version": ANALYTICAL_VERSION, "algorithm": self.algorithm,
                    "channels": self.channels, "latency": asdict(self.latency)}
        if self.algorithm == NCCL_CHOICE:  # (the ring's identity, and so its cached answers, unchanged)
            identity["nccl_release"] = V2_30_7.tag
        return identity

    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        """One collective of nbytes on this group. By symmetry of the topology the answer
        depends only on the group's fabric form (network/symmetry.py: its canonical shape on a
        bundle spine); send_recv: its direction does not matter on a bundle spine, and on an ecmp
        spine it is timed from the lowest GPU id to the other (time() keeps the node's direction)."""
        return self._linear(group, kind).seconds(nbytes)

    def _linear(self, group: Placement, kind: str) -> LinearCollective | TreeCollective | NcclChosen:
        """The collective's time as fixed + bytes x per byte on this group, memoised per fabric form (algorithm
        nccl, tuned kinds: NCCL's pick and time per size, memoised per machine description NCCL would see)."""
        if self.algorithm == NCCL_CHOICE and kind in TUNED_KINDS:
            key = (kind, *machine_of(group))
            chosen = self._memo.get(key)
            if chosen is None:
                chosen = self._memo[key] = NcclChosen(inputs_of(group), kind)
            return chosen
        form, canonical = fabric_form(group)
        # settings in the key too: the memo must not outlive a change of algorithm or channels
        key = (kind, form, self.algorithm, self.channels, self.latency)
        linear = self._memo.get(key)
        if linear is None:
            if kind == "all_reduce" and self.algorithm == "ring":  # the simulator's hot path: no schedule
                linear = ring_allreduce_linear(canonical, self.channels, self.latency)
            elif kind == "all_reduce" and self.algorithm == "tree":
                linear = TreeCollective(canonical, self.channels, self.latency)
            else:
                algorithm = "ring" if self.algorithm == NCCL_CHOICE else self.algorithm  # NCCL's point-to-point
                schedule = collective_schedule(kind, algorithm, canonical,
                                               _reference_bytes(canonical, self.channels), self.channels,
                                               dependencies=False)
                linear = LinearCollective.of(schedule, group.topology, self.latency)
            self._memo[key] = linear
        return linear

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        out = {}
        for job, graph in graphs.items():
            # A DDP step has a collective per bucket over one group, a hybrid step thousands over a few
            # groups: each (kind, group) is looked up once, each payload priced by its linear form.
            seen: dict = {}

            def seconds(n):
                key = (n.kind, n.group)
                linear = seen.get(key)
                if linear is None:
                    # across graphs too, by the group's GPUs: a DDP step is laid on its shape's canonical
                    # placement, so every step of one shape asks about the same group
                    linear = seen[key] = memoised(
                        self._by_group, (n.kind, n.group, self.algorithm, self.channels, self.latency),
                        lambda: self._linear(Placement(self.topology, n.group), n.kind), MAX_GROUPS)
                return linear.seconds(n.nbytes)

            out[job] = time_node_by_node(graph, seconds, CommResult(self.name))
        return out
