"""Small ecmp fabrics whose expected times are easy to write by hand (see conftest's figures)."""

from __future__ import annotations

from conftest import small_topology_mapping

from artist.network.ecmp import ecmp_plane
from artist.parallel.graph import Node, StepGraph
from artist.topology import Topology

NIC_GBPS = 100.0  # NICs and spine ports at one speed, so one flow fills one port


def ecmp_topology(racks=2, machines_per_rack=4, gpus_per_machine=1, oversubscription=1.0, model="ecmp",
                  port_gbps=NIC_GBPS) -> Topology:
    data = small_topology_mapping(racks=racks, machines_per_rack=machines_per_rack,
                                  gpus_per_machine=gpus_per_machine, oversubscription=oversubscription)
    data["tiers"]["rack"]["bandwidth_gbps"] = NIC_GBPS
    data["tiers"]["spine"]["bandwidth_gbps"] = port_gbps
    data["tiers"]["spine"]["model"] = model
    return Topology.from_mapping(data, "<test>")


def allreduce_graph(gpus, nbytes: int) -> StepGraph:
    return StepGraph((Node(0, "all_reduce", group=tuple(sorted(gpus)), nbytes=int(nbytes)),))


def one_gpu_per_rack_pairs(topology: Topology):
    """Every 2-GPU group with one GPU in rack 0 and one in rack 1 (1 GPU per machine)."""
    per_rack = topology.gpus_per_rack
    return [(a, per_rack + b) for a in range(per_rack) for b in range(per_rack)]


def colliding_pairs(topology, collide: bool):
    """Two 2-GPU jobs (one GPU in each rack) whose rack-crossing flows take the same spine plane
    in both directions (collide) or share no plane at all, by the documented hash."""
    pairs = one_gpu_per_rack_pairs(topology)
    for i, a in enumerate(pairs):
        for b in pairs[i + 1:]:
            if set(a) & set(b):
                continue
            planes_a = {ecmp_plane(topology, a[0], a[1]), ecmp_plane(topology, a[1], a[0])}
            planes_b = {ecmp_plane(topology, b[0], b[1]), ecmp_plane(topology, b[1], b[0])}
            if collide and ecmp_plane(topology, a[0], a[1]) == ecmp_plane(topology, b[0], b[1]) and \
                    ecmp_plane(topology, a[1], a[0]) == ecmp_plane(topology, b[1], b[0]):
                return a, b
            if not collide and not planes_a & planes_b:
                return a, b
    raise AssertionError("no such pair on this topology")
