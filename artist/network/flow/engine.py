"""Executes step graphs of one or several jobs as fluid flows sharing the links.

The same rules as the ns-3 engine (network/ns3/engine.cc), with bytes as a
fluid instead of packets:
- a node starts when all its dependencies have ended (at 0 without any); every
  graph of a run starts at 0 together (co-runners from a common start);
- a compute node ends ``seconds`` later;
- a communication node runs its collective's schedule (collectives.py): it
  pays NCCL's base latency, then every transfer starts its start-up latency
  (alpha, per link kind) after the last transfer it depends on was delivered
  to its sender (roots: after the base latency);
- transfers of one connection (job, sender, receiver, channel) go one after
  another, as the messages of one NCCL channel connection (and of the ns-3
  engine's connections) do: a transfer ready while an earlier one of its
  connection still flows waits for it to drain;
- a job's flows leaving a GPU by the same first link (its NVSwitch port or its
  NIC) are served in the order they started, work-conserving: after the
  max-min rates, each such group takes its rates back flow by flow in start
  order, each what its links have left (_sender_first), so the first takes
  what it can use and the next ones what it leaves, while a flow held back at
  another link keeps its fair share there against other jobs. Why not equal shares: the
  ns-3 engine round-robins a GPU's connections frame by frame, yet the
  channels of a ring desynchronise there (a frame of skew grows through the
  ring's dependencies), so one channel sends while another waits out its
  start-up latency and the NIC never idles; equal shares keep the channels in
  lock-step and expose every start-up latency (measured: a 6-GPU 2-channel
  ring all-reduce of 4 MiB, one GPU per machine, 713 us fluid with equal
  shares, 614 us in ns-3). Only chunk pipelines (collectives whose transfers
  have dependencies: rings, trees) take turns so; a collective without
  dependencies (all_to_all, send_recv) has all its flows in flight from the
  start, and ns-3's round-robin serves them side by side, one share per flow
  (turns there let an all_to_all's flows drain one after another, so beside a
  ring it held fewer flows on a shared port than in ns-3: a 4-GPU all_to_all
  and an 8-GPU ring on a 8:1 spine, 2 channels, ring 23 % fast and all_to_all
  28 % slow against ns-3 round-robin; with a share per flow within 3 %).
  Flows of different jobs, or of one job from different GPUs, have weight 1
  against each other where they meet;
- a flowing transfer is a flow on its route's links (links.py: NVSwitch ports,
  NICs, the spine bundle or the ECMP-hashed spine ports); the flows active at
  any moment share every link max-min fairly (maxmin.py), recomputed whenever
  a flow starts or drains; a drained transfer is delivered its path's
  propagation and switch latency later;
- a communication node ends when its last transfer is delivered (at once if it
  has none: a group of one GPU).
Time advances from event to event (a flow draining at its current rate, or a
scheduled start / delivery / end), all changes at one instant are applied
before the rates are recomputed; iteration is in insertion order, so a run is
deterministic.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from artist.network.collectives import Schedule
from artist.network.flow.maxmin import max_min_rates, max_min_rates_small
from artist.network.flow.window import window_rates
from artist.network.links import link_bandwidth_bps, path
from artist.parallel.graph import StepGraph
from artist.topology import Topology

_ROOTS, _START, _DELIVER, _END = 0, 1, 2, 3
MAX_TRANSFERS = 5_000_000  # per run: a limit, so that no question allocates without bound


@dataclass
class FlowRunResult:
    node_start: list[list[float]]  # per graph, per node
    node_end: list[list[float]]
    transfers: int
    rate_updates: int
    link_bytes: dict  # link id -> bytes carried (conservation checks, utilisation)


class _Transfer:
    __slots__ = ("links", "nbytes", "alpha", "latency", "dependents", "deps_left", "owner", "connection", "rtt",
                 "ordered")

    def __init__(self, links, nbytes, alpha, latency, owner, connection, rtt=0.0, ordered=True):
        self.connection = connection
        self.ordered = ordered  # its collective is a chunk pipeline (transfers with dependencies): _sender_first
        self.rtt = rtt  # base round-trip time (window sharing)
        self.links = links
        self.nbytes = nbytes
        self.alpha = alpha
        self.latency = latency
        self.dependents: list[int] = []
        self.deps_left = 0
        self.owner = owner  # (graph, node)


def _sender_priority(transfers: list, active: list[int]) -> list[int]:
    """Priority level of each active flow (_sender_first): how many flows of its job that started
    earlier leave its sending GPU on its first link; `active` is in start order. GPUs sharing a NIC
    share it equally (each GPU's first flow is at level 0)."""
    seen: dict[tuple, int] = {}
    out = []
    for i in active:
        tr = transfers[i]
        if not tr.ordered:
            out.append(0)
            continue
        key = (tr.owner[0], tr.connection[1], tr.links[0])  # job, sending GPU (GPUs may share a NIC), link
        position = seen.get(key, 0)
        seen[key] = position + 1
        out.append(position)
    return out


@dataclass(frozen=True)
class Sharing:
    """How flows share links. "maxmin" (default): every link max-min fair per flow (maxmin.py), as
    ns-3's round-robin switch arbitration shares a port, with a job's flows at one sender in start
    order (_sender_first).
    "window": every flow keeps window_bytes in flight and every link is a FIFO queue
    (window.py's fluid fixed point of window flow control), as in the ns-3 engine's window
    transport, whose defaults these mirror (network/ns3/__init__.py TransportOptions: 1 MiB
    window, 9000-byte frames, an ack every 8 frames; choices there, not measurements). Measured
    against ns-3 it is not closer overall (flow/__init__.py's docstring) and 5-10x slower."""

    model: str = "maxmin"
    window_bytes: int = 1 << 20
    mtu: int = 9000
    ack_every: int = 8

    def __post_init__(self):
        if self.model not in SHARING_MODELS:
            raise ValueError(f"unknown link sharing {self.model!r}; known: {', '.join(SHARING_MODELS)}")
        if self.window_bytes < self.mtu or self.mtu < 64 or self.ack_every < 1:
            raise ValueError(f"invalid flow sharing settings {self}")

    def base_rtt(self, p, capacities: list[float]) -> float:
        """A transfer's round-trip time without queues: its path's latency both ways, one frame's
        store-and-forward per link, and the frames an ack waits for (plus as many in the sending
        device's queue, which the ns-3 engine keeps 8 frames deep) at the path's slowest link."""
        slowest = min(capacities)
        return (2 * p.latency_s + sum(self.mtu / c for c in capacities)
                + (self.ack_every + 8) * self.mtu / slowest)


SHARING_MODELS = ("window", "maxmin")


def run_graphs(topology: Topology, graphs: Sequence[StepGraph], schedule_of: Callable[[object], Schedule],
               latency, sharing: Sharing = Sharing()) -> FlowRunResult:
    """Run the graphs together; schedule_of(node) gives a communication node's schedule."""
    link_index: dict[tuple, int] = {}
    capacity: list[float] = []
    route_memo: dict[tuple, tuple[np.ndarray, float, float, float]] = {}

    def route(src: int, dst: int, channel: int):
        key = (src, dst, channel)
        found = route_memo.get(key)
        if found is None:
            p = path(topology, src, dst, channel)
            ids = []
            for link in p.links:
                if link not in link_index:
                    link_index[link] = len(capacity)
                    capacity.append(link_bandwidth_bps(topology, link) / 8.0)
                ids.append(link_index[link])
            rtt = sharing.base_rtt(p, [capacity[i] for i in ids])
            found = route_memo[key] = (tuple(ids), latency.per_step(p.kind), p.latency_s, rtt)
        return found

    transfers: list[_Transfer] = []
    comm_roots: dict[tuple[int, int], list[int]] = {}
    comm_left: dict[tuple[int, int], int] = {}
    for gi, graph in enumerate(graphs):
        for node in graph.nodes:
            if not node.is_communication:
                continue
            schedule = schedule_of(node)
            first = len(transfers)
            if first + len(schedule.transfers) > MAX_TRANSFERS:
                raise ValueError(f"the flow model's run would hold more than {MAX_TRANSFERS} transfers")
            roots = []
            ordered = any(t.deps for t in schedule.transfers)
            for i, t in enumerate(schedule.transfers):
                links, alpha, lat, rtt = route(schedule.ranks[t.src], schedule.ranks[t.dst], t.channel)
                connection = (gi, schedule.ranks[t.src], schedule.ranks[t.dst], t.channel)
                tr = _Transfer(links, float(t.nbytes), alpha, lat, (gi, node.id), connection, rtt, ordered)
                tr.deps_left = len(t.deps)
                for d in t.deps:
                    transfers[first + d].dependents.append(first + i)
                transfers.append(tr)
                if not t.deps:
                    roots.append(first + i)
            comm_roots[(gi, node.id)] = roots
            comm_left[(gi, node.id)] = len(schedule.transfers)

    node_start = [[math.nan] * len(g.nodes) for g in graphs]
    node_end = [[math.nan] * len(g.nodes) for g in graphs]
    node_deps_left = [[len(n.deps) for n in g.nodes] for g in graphs]
    node_dependents: list[list[list[int]]] = [[[] for _ in g.nodes] for g in graphs]
    for gi, graph in enumerate(graphs):
        for node in graph.nodes:
            for d in node.deps:
                node_dependents[gi][d].append(node.id)

    heap: list = []
    seq = 0

    def push(when: float, action: int, arg) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (when, seq, action, arg))

    def start_node(gi: int, ni: int, now: float) -> None:
        node_start[gi][ni] = now
        node = graphs[gi].nodes[ni]
        if not node.is_communication:
            push(now + node.seconds, _END, (gi, ni))
        elif comm_left[(gi, ni)] == 0:
            push(now, _END, (gi, ni))
        else:
            push(now + latency.base_s, _ROOTS, (gi, ni))

    for gi, graph in enumerate(graphs):
        for node in graph.nodes:
            if not node.deps:
                start_node(gi, node.id, 0.0)

    count = len(transfers)
    remaining = np.zeros(count)
    rate_of = np.zeros(count)
    nbytes = np.fromiter((tr.nbytes for tr in transfers), dtype=np.float64, count=count)
    started_as = [0] * count  # start order of each flowing transfer (max-min order, sender priority)
    queued: dict[tuple, list[int]] = {}  # busy connection -> transfers waiting for it, in order
    active: list[int] = []  # transfer ids in start order
    active_arr = np.zeros(0, dtype=np.int64)
    on_link: dict[int, dict[int, None]] = {}  # link -> its flowing transfers, in start order (a dict: O(1) removal)
    dirty: set[int] = set()  # links whose flows changed since the rates were computed
    capacity_arr = np.asarray(capacity, dtype=np.float64)
    queue_delay: dict[int, float] = {}  # window sharing: port -> its last queueing delay (warm start)
    now = 0.0
    updates = 0
    starts = 0

    def begin(tid: int) -> None:
        nonlocal starts
        remaining[tid] = nbytes[tid]
        started_as[tid] = starts
        starts += 1
        active.append(tid)
        for link in transfers[tid].links:
            on_link.setdefault(link, {})[tid] = None
            dirty.add(link)

    while heap or active:
        t_event = heap[0][0] if heap else math.inf
        drained: list[int] = []
        if active:
            rates = rate_of[active_arr]
            rem = remaining[active_arr]
            times = np.divide(rem, rates, out=np.full(len(rem), np.inf), where=rates > 0)  # 0: waits its turn
            first = int(np.argmin(times))
            t_done = now + float(times[first])
            t_next = min(t_event, t_done)
            rem = rem - rates * (t_next - now)
            if t_done <= t_event:
                rem[first] = 0.0
            done = rem <= 1e-9 * nbytes[active_arr] + 1e-6
            remaining[active_arr] = np.where(done, 0.0, rem)
            if done.any():
                drained = active_arr[done].tolist()
                active = active_arr[~done].tolist()
                for i in drained:
                    for link in transfers[i].links:
                        del on_link[link][i]
                        dirty.add(link)
            now = t_next
        else:
            now = t_event
        for i in drained:
            push(now + transfers[i].latency, _DELIVER, i)
            waiting = queued[transfers[i].connection]
            if waiting:
                begin(waiting.pop(0))
            else:
                del queued[transfers[i].connection]
        while heap and heap[0][0] <= now:
            _, _, action, arg = heapq.heappop(heap)
            if action == _START:
                tr = transfers[arg]
                if tr.nbytes <= 0:
                    push(now + tr.latency, _DELIVER, arg)
                elif tr.connection in queued:  # the connection is busy: wait in order
                    queued[tr.connection].append(arg)
                else:
                    queued[tr.connection] = []
                    begin(arg)
            elif action == _DELIVER:
                tr = transfers[arg]
                for d in tr.dependents:
                    dep = transfers[d]
                    dep.deps_left -= 1
                    if dep.deps_left == 0:
                        push(now + dep.alpha, _START, d)
                comm_left[tr.owner] -= 1
                if comm_left[tr.owner] == 0:
                    push(now, _END, tr.owner)
            elif action == _ROOTS:
                for r in comm_roots[arg]:
                    push(now + transfers[r].alpha, _START, r)
            else:  # _END
                gi, ni = arg
                node_end[gi][ni] = now
                for d in node_dependents[gi][ni]:
                    node_deps_left[gi][d] -= 1
                    if node_deps_left[gi][d] == 0:
                        start_node(gi, d, now)
        if dirty:
            active_arr = np.asarray(active, dtype=np.int64)
            component = _connected_flows(dirty, on_link, transfers)
            dirty.clear()
            if component:
                component.sort(key=started_as.__getitem__)
                if sharing.model == "window":
                    rate_of[component] = _window_rates(component, transfers, capacity_arr, sharing.window_bytes,
                                                       queue_delay)
                else:
                    rate_of[component] = _component_rates(component, transfers, capacity_arr)
                updates += 1
    for gi, graph in enumerate(graphs):
        missing = [n.id for n in graph.nodes if math.isnan(node_end[gi][n.id])]
        if missing:
            raise RuntimeError(f"flow model: graph {gi} nodes {missing[:5]} never ended (a dependency cycle?)")
    carried = [0.0] * len(capacity)
    for tr in transfers:  # every transfer drains completely: a link carries all bytes routed over it
        for link in tr.links:
            carried[link] += tr.nbytes
    by_id = {link: carried[i] for link, i in link_index.items()}
    return FlowRunResult(node_start, node_end, len(transfers), updates, by_id)


def _connected_flows(links: set[int], on_link: dict[int, dict[int, None]], transfers: list) -> list[int]:
    """Flowing transfers connected to these links through shared links. Max-min rates of flows
    that share no link, directly or through others, do not depend on each other, so only these
    need new rates when the flows on `links` changed."""
    seen_links = set(links)
    frontier = list(links)
    flows: set[int] = set()
    while frontier:
        link = frontier.pop()
        for tid in on_link.get(link, ()):
            if tid in flows:
                continue
            flows.add(tid)
            for other in transfers[tid].links:
                if other not in seen_links:
                    seen_links.add(other)
                    frontier.append(other)
    return list(flows)


def _window_rates(flows: list[int], transfers: list, capacity: np.ndarray, window_bytes: int,
                  queue_delay: dict[int, float]) -> np.ndarray:
    """Window-sharing rates of these flows: every flow keeps a full window in flight, every link
    (the sender's too) is a FIFO queue (window.py). Why a full window even for a transfer with
    fewer bytes left: rates proportional to the bytes left, recomputed at every event, starve a
    draining transfer geometrically (tried: it never finished beside fresh flows); a transfer's
    own size as its window made the benchmark's errors larger (median 6.0 %, max 75 %)."""
    flow_links = [list(transfers[i].links) for i in flows]
    caps = {link: float(capacity[link]) for links in flow_links for link in links}
    window = [float(window_bytes)] * len(flows)
    rtt = [transfers[i].rtt for i in flows]
    return np.asarray(window_rates(flow_links, caps, window, rtt, queue_delay))


SMALL_COMPONENT = 24  # flows: below this, plain Python beats numpy's per-call overhead (measured)


def _component_rates(flows: list[int], transfers: list, capacity: np.ndarray) -> np.ndarray:
    """Rates of these flows (in start order) on their links: max-min fair per flow on every link, then
    each job's flows at one sender re-ordered by start (_sender_first)."""
    if len(flows) < SMALL_COMPONENT:
        flow_links = [transfers[i].links for i in flows]
        caps = {link: float(capacity[link]) for links in flow_links for link in links}
        rates = max_min_rates_small(flow_links, caps, [1.0] * len(flows))
    else:
        lengths = [len(transfers[i].links) for i in flows]
        link_of = np.fromiter((link for i in flows for link in transfers[i].links), dtype=np.int64,
                              count=sum(lengths))
        used, local = np.unique(link_of, return_inverse=True)
        flow_of = np.repeat(np.arange(len(flows)), lengths)
        rates = max_min_rates(flow_of, local, len(flows), capacity[used]).tolist()
    return np.asarray(_sender_first(flows, transfers, capacity, rates))


def _sender_first(flows: list[int], transfers: list, capacity: np.ndarray, fair: list[float]) -> list[float]:
    """Strict priority by start order among a job's flows at one sender, against the fair rates of
    everyone else: per group of flows (job, sending GPU, first link) with two or more, in order of
    their first flow, the group's rates are taken off its links and given back flow by flow, each
    the least capacity left on its links. A flow that is bottlenecked elsewhere (a congested switch
    port) so keeps its fair share there, as per-flow round-robin switches give it (ns-3's
    arbitration round-robin); a sender whose NIC is the bottleneck sends its flows one after another
    (why: _sender_priority; the levels of maxmin.py applied to every link instead made a job's later
    flows yield to other jobs' first flows at every port: 32 % error against ns-3 on s17 of
    benchmarks/contention_accuracy.py)."""
    levels = _sender_priority(transfers, flows)
    groups: dict[tuple, list[int]] = {}
    for k, i in enumerate(flows):
        tr = transfers[i]
        if not tr.ordered:
            continue
        groups.setdefault((tr.owner[0], tr.connection[1], tr.links[0]), []).append(k)
    rates = list(fair)
    left: dict[int, float] | None = None
    for members in groups.values():
        if len(members) < 2:
            continue
        if left is None:  # capacity left on each link by the current rates
            left = {}
            for k, i in enumerate(flows):
                for link in transfers[i].links:
                    left[link] = left.get(link, float(capacity[link])) - rates[k]
        for k in members:
            for link in transfers[flows[k]].links:
                left[link] += rates[k]
        for k in sorted(members, key=levels.__getitem__):
            links = transfers[flows[k]].links
            rate = max(0.0, min(left[link] for link in links))
            rates[k] = rate
            for link in links:
                left[link] -= rate
    return rates
