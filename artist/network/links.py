"""Which links and switches a GPU-to-GPU transfer crosses, shared by all backends.

Directional link ids:
  ("gpu_up", g) / ("gpu_down", g)     GPU g <-> its machine's NVSwitch   (machine tier)
  ("nic_up", n) / ("nic_down", n)     NIC n <-> its leaf switch           (rack tier; n = topology.nic_of(g)
                                      for GPU g: g itself with one NIC per GPU)
  ("rack_up", l) / ("rack_down", l)   leaf switch l <-> the spine           (spine tier, ``bundle`` model)
  ("port_up", i) / ("port_down", i)   leaf l's uplink port k <-> spine plane k, i = l * spine_ports + k
                                      (spine tier, ``ecmp`` model; k from network/ecmp.py's hash)
A leaf switch is a rack's switch (leaf = rack), or with rail-optimised wiring a
rack's switch of rail k (leaf = rack x GPUs per machine + k; topology.leaf_of).
Levels above the spine (topology ``levels``, named e.g. ``core``), for unit u of
the level below (a block of level i-1, topology.level_unit):
  ("core_up", u) / ("core_down", u)             u's uplink bundle into the level (``bundle``)
  ("core_port_up", j) / ("core_port_down", j)   u's uplink port k, j = u * ports + k (``ecmp``;
                                                k from ecmp.py's hash for the level)
A transfer climbs to the lowest level whose block holds both GPUs' racks
(topology.common_level): at each level up the sender's unit's uplink (its ECMP
port k), at each level down the receiver's unit's matching downlink (port k).

Intra-machine traffic goes over the NVSwitch, everything else over the NICs
(each GPU's own, or the one it shares with other GPUs of its machine),
and between leaves (racks; with rails also rails of one rack) through the spine.
With an ``ecmp`` spine the route depends on the transfer's channel (the hash
sees it); with the bundle it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from artist.network.ecmp import ecmp_port
from artist.topology import Topology

LinkId = tuple[str, int]

# Link kinds in NCCL's terms, used to pick a per-step start-up latency.
NVLINK, NET = "nvlink", "net"


@dataclass(frozen=True)
class Path:
    links: tuple[LinkId, ...]
    latency_s: float  # propagation over the links + switch traversal
    kind: str  # NVLINK or NET


def link_bandwidth_bps(topology: Topology, link: LinkId) -> float:
    kind = link[0]
    if kind in ("gpu_up", "gpu_down"):
        return topology.machine.bandwidth_bps
    if kind in ("nic_up", "nic_down"):
        return topology.rack.bandwidth_bps
    if kind in ("rack_up", "rack_down"):
        return topology.leaf_uplink_bps
    if kind in ("port_up", "port_down"):
        return topology.spine.bandwidth_bps
    if kind in topology.link_kinds:
        level, port = topology.link_kinds[kind]
        if port:
            return topology.levels[level - 1].bandwidth_bps
        return topology.uplink_bps(level, link[1])
    raise KeyError(f"unknown link kind {kind!r}")


def is_uplink(kind: str) -> bool:
    """True for a switch's uplink above the racks (any level), False for GPU and NIC links."""
    return kind not in ("gpu_up", "gpu_down", "nic_up", "nic_down")


def path(topology: Topology, src: int, dst: int, channel: int = 0) -> Path:
    if src == dst:
        raise ValueError(f"a transfer needs two different GPUs, got {src} -> {dst}")
    t = topology
    ms, md = t.machine_of(src), t.machine_of(dst)
    if ms == md:
        return Path((("gpu_up", src), ("gpu_down", dst)),
                    2 * t.machine.link_latency_s + t.machine.switch_latency_s, NVLINK)
    if t.rails:
        rs, rd = t.leaf_of(src), t.leaf_of(dst)
    else:
        rs, rd = t.rack_of_machine(ms), t.rack_of_machine(md)
    if rs == rd:
        return Path((("nic_up", t.nic_of(src)), ("nic_down", t.nic_of(dst))),
                    2 * t.rack.link_latency_s + t.rack.switch_latency_s, NET)
    return _climb(t, src, dst, rs, rd, channel)


def _climb(t: Topology, src: int, dst: int, leaf_s: int, leaf_d: int, channel: int) -> Path:
    """The route between two GPUs on different leaves, up to their common level and down (module docstring)."""
    top = t.common_level(leaf_s, leaf_d)
    up, down = [], []
    # links first, then switches: with the spine as the top this is the flat fabric's float order, bit for bit
    latency = 2 * t.rack.link_latency_s + sum(2 * level.link_latency_s for level in t.levels[:top])
    latency += 2 * t.rack.switch_latency_s
    for i in range(1, top + 1):
        level = t.levels[i - 1]
        us, ud = t.level_unit(leaf_s, i), t.level_unit(leaf_d, i)
        kind_up, kind_down = t.uplink_kinds(i)
        if level.model == "ecmp":
            k, ports = ecmp_port(t, src, dst, channel, i), t.level_ports(i)
            us, ud = us * ports + k, ud * ports + k
        up.append((kind_up, us))
        down.append((kind_down, ud))
        latency += (1 if i == top else 2) * level.switch_latency_s
    return Path((("nic_up", t.nic_of(src)),) + tuple(up) + tuple(reversed(down)) + (("nic_down", t.nic_of(dst)),),
                latency, NET)
