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

Intra-machine traffic goes over the NVSwitch, everything else over the NICs
(each GPU's own, or the one it shares with other GPUs of its machine),
and between leaves (racks; with rails also rails of one rack) through the spine.
With an ``ecmp`` spine the route depends on the transfer's channel (the hash
sees it); with the bundle it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from artist.network.ecmp import ecmp_plane
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
    raise KeyError(f"unknown link kind {kind!r}")


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
    if t.spine_model == "ecmp":
        k = ecmp_plane(t, src, dst, channel)
        ports = t.spine_ports
        spine = (("port_up", rs * ports + k), ("port_down", rd * ports + k))
    else:
        spine = (("rack_up", rs), ("rack_down", rd))
    return Path(
        (("nic_up", t.nic_of(src)),) + spine + (("nic_down", t.nic_of(dst)),),
        2 * t.rack.link_latency_s + 2 * t.spine.link_latency_s + 2 * t.rack.switch_latency_s + t.spine.switch_latency_s,
        NET,
    )
