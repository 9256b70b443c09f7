"""Turn collective schedules (one or several jobs') into the engine's input arrays.

The network realises exactly the links of artist/network/links.py, and only the
ones the job's transfers cross:
- per GPU a link to its machine's NVSwitch node (machine tier),
- per NIC a link to its leaf switch node (rack tier): from the GPU node itself where
  the GPU has a NIC of its own; where GPUs share a NIC, from a NIC node, each of its
  GPUs attached to it by a link 1000x the NIC's rate with no delay (the GPU-to-NIC PCIe
  hop is no tier of the model, links.py has no link for it: this one never limits, and
  adds < 0.1 ns per 9 KB frame at a 400 Gb/s NIC's 1000x),
- ``bundle`` spine: per leaf switch (a rack's switch, or with rails a rail's) an
  uplink to the spine node at topology.leaf_uplink_bps (spine tier, oversubscription
  applied; the bundle of spine ports is one link of that capacity);
- ``ecmp`` spine: per leaf and plane k used, the leaf's uplink port k to spine
  switch k at the spine port bandwidth (links.py's port links).
- levels above the spine (topology ``levels``): one node per switch block of every
  level (a block's ECMP planes collapse into its node: the ports stay separate links,
  which is where the model's capacity limits are); per unit below and level, its
  uplink bundle or each of its ports used, as links.py's ids. The spine's blocks are
  then nodes too, each leaf linked to its own block's node.
Every route is links.path() for the transfer's channel, so intra-machine traffic
crosses the NVSwitch, inter-machine traffic the NICs, and inter-rack traffic the
spine plane the ECMP hash picks, as in the analytical and flow models. Links are
keyed by what they are, so the jobs of one run share every link they have in common.

Switch latency: ns-3 point-to-point channels have one delay for both directions,
so half of each switch's latency is folded into the delay of every link attached
to it. Every endpoint-to-endpoint path then has links.path()'s latency exactly
(each switch traversed is entered by one link and left by another: two halves).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from artist.network.analytical import StartupLatency
from artist.network.collectives import Schedule
from artist.network.links import link_bandwidth_bps, path
from artist.topology import Topology

ATTACH_RATE_FACTOR = 1000.0  # a GPU's link to its shared NIC's node: this many times the NIC's rate

# Link kinds of links.py -> (our bidirectional link key, direction: 0 = a->b, 1 = b->a).
_LINK_OF = {
    "gpu_up": ("gpu", 0), "gpu_down": ("gpu", 1),
    "nic_up": ("nic", 0), "nic_down": ("nic", 1),
    "rack_up": ("uplink", 0), "rack_down": ("uplink", 1),
    "port_up": ("port", 0), "port_down": ("port", 1),
}


@dataclass(frozen=True)
class EngineCollective:
    """One collective of a run, or a timer (a compute node: schedule None, timer_s seconds).

    It starts at max(t0 + ready_s, the end of its last predecessor), pays the base latency
    (timers: timer_s instead), then its messages run by their own dependencies."""

    schedule: Schedule | None
    ready_s: float = 0.0
    preds: tuple[int, ...] = ()  # indices of earlier collectives that must end first
    timer_s: float = 0.0
    job: int = 0  # messages of different jobs never share a connection


@dataclass
class EngineInput:
    """Flat arrays for the C++ Spec (see engine.cc) plus what they describe."""

    node_names: list[str] = field(default_factory=list)
    link_names: list[str] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    gpus: tuple[int, ...] = ()  # GPU of node i, for the first len(gpus) nodes (the rest are switches)
    collective_messages: list[tuple[int, int]] = field(default_factory=list)  # [first, end) per collective
    expected_rx: list[int] = field(default_factory=list)  # payload bytes each GPU node must receive
    expected_tx: list[int] = field(default_factory=list)  # ... and send

    @property
    def messages(self) -> int:
        return len(self.arrays["m_src"])


class _NetworkBuilder:
    def __init__(self, topology: Topology, gpus: Sequence[int]):
        self.t = topology
        self.rank_gpus = tuple(gpus)  # node i is GPU rank_gpus[i]
        self.rank_of = {g: i for i, g in enumerate(self.rank_gpus)}
        self.node_names = [f"gpu{g}" for g in self.rank_gpus]
        self.node_of: dict[tuple, int] = {}
        self.links: dict[tuple, int] = {}
        self.link_a: list[int] = []
        self.link_b: list[int] = []
        self.link_bps: list[float] = []
        self.link_delay: list[float] = []
        self.link_names: list[str] = []
        # (src, dst, channel) -> (route id, link kind); channel 0 for all on a bundle spine
        self.routes: dict[tuple[int, int, int], tuple[int, str]] = {}
        self.per_channel = any(level.model == "ecmp" for level in topology.levels)
        self.route_steps: list[list[tuple[int, int]]] = []

    def _switch(self, key: tuple) -> int:
        if key not in self.node_of:
            self.node_of[key] = len(self.node_names)
            self.node_names.append("-".join(str(k) for k in key))
        return self.node_of[key]

    def _link(self, kind: str, index: int, link_id: tuple) -> int:
        key = (kind, index)
        if key in self.links:
            return self.links[key]
        t = self.t
        if kind == "gpu":
            a, b = self.rank_of[index], self._switch(("nvswitch", t.machine_of(index)))
            delay = t.machine.link_latency_s + t.machine.switch_latency_s / 2
        elif kind == "nic":  # index: the NIC's global id (topology.nic_of)
            gpu = _gpu_of_nic(t, index)
            a = self._switch(("nic", index)) if t.shared_nics else self.rank_of[gpu]
            b = self._switch(("rackswitch", t.leaf_of(gpu)))
            delay = t.rack.link_latency_s + t.rack.switch_latency_s / 2
        elif kind == "attach":  # GPU index -> its shared NIC's node (see the module docstring)
            a, b = self.rank_of[index], self._switch(("nic", t.nic_of(index)))
            delay = 0.0
        elif kind.startswith("level"):  # an uplink into a level, under levels above the spine
            level, unit = self._level_unit(link_id)
            a, b = self._level_ends(level, unit)
            lower = t.rack if level == 1 else t.levels[level - 2]
            delay = (t.levels[level - 1].link_latency_s + lower.switch_latency_s / 2
                     + t.levels[level - 1].switch_latency_s / 2)
        elif kind == "port":  # ecmp: leaf index // ports, plane index % ports
            leaf, plane = divmod(index, t.spine_ports)
            a, b = self._switch(("rackswitch", leaf)), self._switch(("spine", plane))
            delay = t.spine.link_latency_s + t.rack.switch_latency_s / 2 + t.spine.switch_latency_s / 2
        else:
            a, b = self._switch(("rackswitch", index)), self._switch(("spine",))
            delay = t.spine.link_latency_s + t.rack.switch_latency_s / 2 + t.spine.switch_latency_s / 2
        self.links[key] = len(self.link_a)
        self.link_a.append(a)
        self.link_b.append(b)
        self.link_bps.append(ATTACH_RATE_FACTOR * t.rack.bandwidth_bps if kind == "attach"
                             else link_bandwidth_bps(t, link_id))
        self.link_delay.append(delay)
        self.link_names.append(f"{kind}{index}")
        return self.links[key]

    def _kind(self, link_kind: str) -> tuple[str, int]:
        """(our link key, direction) of a links.py link kind; under levels above the spine every uplink,
        the spine's too, is a link "level<i>" between block nodes."""
        if self.t.hierarchy is not None and link_kind in self.t.link_kinds:
            return f"level{self.t.link_kinds[link_kind][0]}", 1 if link_kind.endswith("_down") else 0
        return _LINK_OF[link_kind]

    def _level_unit(self, link_id: tuple) -> tuple[int, int]:
        """(level, unit below) of an uplink id into a level (links.py: a port's id is unit x ports + k)."""
        level, port = self.t.link_kinds[link_id[0]]
        return level, link_id[1] // self.t.level_ports(level) if port else link_id[1]

    def _level_ends(self, level: int, unit: int) -> tuple[int, int]:
        """Nodes of unit's uplink into `level`: the unit's switch (a leaf, or a block of level - 1) and its
        parent block's node."""
        t = self.t
        if level == 1:
            return self._switch(("rackswitch", unit)), self._switch(("block", 1, t.level_unit(unit, 2)))
        parent = t.hierarchy.parent(unit, level - 1)
        return self._switch(("block", level - 1, unit)), self._switch(("block", level, parent))

    def route(self, src_rank: int, dst_rank: int, channel: int = 0) -> tuple[int, str]:
        """Route id and link kind (nvlink / net) between two GPU nodes for a transfer of `channel`."""
        key = (src_rank, dst_rank, channel if self.per_channel else 0)
        found = self.routes.get(key)
        if found is None:  # a ring reuses a handful of routes for every step: compute each once
            src, dst = self.rank_gpus[src_rank], self.rank_gpus[dst_rank]
            p = path(self.t, src, dst, key[2])
            steps = []
            for link_id in p.links:
                kind, direction = self._kind(link_id[0])
                if kind == "nic" and direction == 0 and self.t.shared_nics:
                    steps.append((self._link("attach", src, ("attach", src)), 0))
                steps.append((self._link(kind, link_id[1], link_id), direction))
                if kind == "nic" and direction == 1 and self.t.shared_nics:
                    steps.append((self._link("attach", dst, ("attach", dst)), 1))
            found = self.routes[key] = (len(self.route_steps), p.kind)
            self.route_steps.append(steps)
        return found


def _gpu_of_nic(topology: Topology, nic: int) -> int:
    """A GPU using this NIC (global ids): the lowest GPU index of its machine attached to it."""
    machine, local = divmod(nic, topology.nics)
    return machine * topology.gpus_per_machine + topology.nic_map.index(local)


def _gpu_nodes(collectives: Sequence[EngineCollective]) -> list[int]:
    """GPUs in order of first appearance in the schedules' rank lists (a single collective's
    nodes are then its ranks in order, as every run of the engine has always numbered them)."""
    seen: dict[int, None] = {}
    for c in collectives:
        if c.schedule is not None:
            seen.update(dict.fromkeys(c.schedule.ranks))
    return list(seen)


def _bytes_per_node(node: np.ndarray, nbytes: np.ndarray, nodes: int) -> list[int]:
    """Sum of nbytes per node index, exactly (Python ints): float sums of integers are exact below 2**53."""
    if int(nbytes.sum()) < 2 ** 53:
        return np.bincount(node, weights=nbytes.astype(np.float64), minlength=nodes).astype(np.int64).tolist()
    total = np.zeros(nodes, dtype=np.int64)
    np.add.at(total, node, nbytes)
    return total.tolist()


def build_engine_input(topology: Topology, collectives: Sequence[EngineCollective],
                       latency: StartupLatency) -> EngineInput:
    """The engine's arrays for these collectives and timers, on the links their transfers cross."""
    if not collectives:
        raise ValueError("at least one collective is needed")
    for i, c in enumerate(collectives):
        if any(not 0 <= p < i for p in c.preds):
            raise ValueError(f"collective {i}: predecessors {c.preds} must be earlier collectives")
    nb = _NetworkBuilder(topology, _gpu_nodes(collectives))
    # per collective, numpy columns of its messages (concatenated below); routes and connections are
    # numbered in order of first appearance, as a message-by-message pass numbers them
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("src", "dst", "route", "coll", "conn", "bytes", "alpha",
                                                         "dep_end", "dep_idx")}
    c_first, c_pred_off, c_pred_idx = [0], [0], []
    conns: dict[tuple[int, int, int, int], int] = {}
    collective_messages = []
    messages = deps = 0
    for c, coll in enumerate(collectives):
        first = messages
        if coll.schedule is not None and len(coll.schedule.transfers):
            tab = coll.schedule.table
            node = np.asarray([nb.rank_of[g] for g in coll.schedule.ranks], dtype=np.uint32)  # columns as sent
            src, dst, channel = node[tab.src], node[tab.dst], tab.channel
            one_channel = not channel.any()
            route_channel = channel if nb.per_channel or one_channel else np.zeros_like(channel)
            width = len(nb.rank_gpus)
            for key_channel, name in ((route_channel, "route"), (channel, "conn")):
                if name == "route" or not (nb.per_channel or one_channel):  # else: the route's keys again
                    keys = (key_channel * width + src) * width + dst
                    uniq, at, inverse = np.unique(keys, return_index=True, return_inverse=True)
                ids, alphas = np.empty(len(uniq), dtype=np.int64), np.empty(len(uniq), dtype=np.float64)
                for u in np.argsort(at, kind="stable").tolist():  # in order of first appearance
                    i = int(at[u])
                    s_i, d_i, ch_i = int(src[i]), int(dst[i]), int(key_channel[i])
                    if name == "route":
                        ids[u], kind = nb.route(s_i, d_i, ch_i)
                        alphas[u] = latency.per_step(kind)
                    else:
                        ids[u] = conns.setdefault((coll.job, s_i, d_i, ch_i), len(conns))
                cols[name].append(ids.astype(np.uint32)[inverse.reshape(-1)])
                if name == "route":
                    cols["alpha"].append(alphas[inverse.reshape(-1)])
            cols["src"].append(src)
            cols["dst"].append(dst)
            cols["coll"].append(np.full(len(src), c, dtype=np.uint32))
            cols["bytes"].append(tab.nbytes)
            cols["dep_end"].append((tab.dep_off[1:] + deps).astype(np.uint32))
            cols["dep_idx"].append((tab.dep_idx + first).astype(np.uint32))
            deps += len(tab.dep_idx)
            messages += len(src)
        c_first.append(messages)
        c_pred_idx.extend(coll.preds)
        c_pred_off.append(len(c_pred_idx))
        collective_messages.append((first, messages))
    cat = {k: np.concatenate(cols.pop(k)) if cols[k] else np.zeros(0, dtype=np.float64 if k == "alpha" else np.int64)
           for k in list(cols)}  # each list dropped as it is joined: the peak is one column, not all
    dep_off = np.concatenate((np.zeros(1, dtype=np.uint32), cat.pop("dep_end").astype(np.uint32)))
    rx = _bytes_per_node(cat["dst"], cat["bytes"], len(nb.rank_gpus))
    tx = _bytes_per_node(cat["src"], cat["bytes"], len(nb.rank_gpus))
    route_off, route_link, route_dir = [0], [], []
    for steps in nb.route_steps:
        for link, direction in steps:
            route_link.append(link)
            route_dir.append(direction)
        route_off.append(len(route_link))
    u32 = lambda xs: np.asarray(xs, dtype=np.uint32)  # noqa: E731
    arrays = {
        "link_a": u32(nb.link_a), "link_b": u32(nb.link_b),
        "link_bps": np.asarray(nb.link_bps, dtype=np.float64),
        "link_delay_s": np.asarray(nb.link_delay, dtype=np.float64),
        "route_off": u32(route_off), "route_link": u32(route_link), "route_dir": u32(route_dir),
        "m_src": u32(cat["src"]), "m_dst": u32(cat["dst"]), "m_route": u32(cat["route"]),
        "m_coll": u32(cat["coll"]), "m_conn": u32(cat["conn"]), "m_bytes": cat["bytes"].astype(np.uint64),
        "m_alpha_s": cat["alpha"].astype(np.float64), "dep_off": u32(dep_off), "dep_idx": u32(cat["dep_idx"]),
        "c_ready_s": np.asarray([c.ready_s for c in collectives], dtype=np.float64),
        "c_base_s": np.asarray([c.timer_s if c.schedule is None else latency.base_s if c.schedule.transfers else 0.0
                                for c in collectives], dtype=np.float64),
        "c_first": u32(c_first), "c_pred_off": u32(c_pred_off), "c_pred_idx": u32(c_pred_idx),
    }
    return EngineInput(nb.node_names, nb.link_names, arrays, tuple(nb.rank_gpus), collective_messages, rx, tx)
