"""Which running jobs can slow each other down: contention components.

GPUs belong to one job at a time, and so do their NVSwitch ports, and their
NICs where every GPU has its own; where GPUs of a machine share a NIC
(topology.shared_nics), jobs on those GPUs that leave the machine share it and
are in one component. Otherwise the only links two jobs can share are the
spine's: a leaf switch's uplink bundle (``bundle``) or its uplink ports
(``ecmp``), a leaf being a rack's switch, or with rail-optimised wiring a
rail's switch of a rack. A job whose GPUs hang off one leaf never crosses
them; jobs spanning leaves share a link only if they have a leaf in common.
So a component is a set of leaf-spanning jobs connected through common
leaves (without rails: rack-spanning jobs through common racks); every other
job is alone. (On an ecmp spine two jobs on a common rack may still hash onto
disjoint ports: the co-simulation of their component then shows no slowdown,
a component is an upper bound on who interacts, never a miss.)

Levels above the spine (topology ``levels``): a job whose racks span several
blocks of level i-1 also crosses those blocks' uplinks into level i, so two jobs
spanning blocks (e.g. aggregation blocks, through the core) share a component
when they have such a block in common, even with no leaf in common.
"""

from __future__ import annotations

from typing import Mapping

from artist.grouping import groups_sharing
from artist.placement import Placement


def uplink_leaves(placement: Placement) -> tuple[int, ...]:
    """The leaf switches whose spine uplinks the job's traffic may cross: () for a job on one machine
    or under one leaf, else the leaves of its GPUs (topology.leaf_of)."""
    if len(placement.gpus_by_machine) < 2:
        return ()
    topology = placement.topology
    if not topology.rails:
        racks = placement.racks
        return tuple(racks) if len(racks) > 1 else ()
    leaves = sorted({topology.leaf_of(g) for g in placement.gpus})
    return tuple(leaves) if len(leaves) > 1 else ()


def shared_uplinks(placement: Placement) -> tuple[tuple, ...]:
    """Every switch uplink the job's traffic may cross, at any level: ("leaf", leaf) for the spine
    (uplink_leaves), (i, block) for a block of level i-1 whose uplinks into level i it crosses."""
    leaves = uplink_leaves(placement)
    tokens = [("leaf", leaf) for leaf in leaves]
    hierarchy = placement.topology.hierarchy
    if not leaves or hierarchy is None:
        return tuple(tokens)
    racks = sorted({leaf // placement.topology.leaves_per_rack for leaf in leaves})
    for level in range(2, hierarchy.depth + 1):
        blocks = sorted({hierarchy.block(rack, level - 1) for rack in racks})
        if len(blocks) < 2:  # inside one block of level - 1: no higher uplink either
            break
        tokens.extend((level, block) for block in blocks)
    return tuple(tokens)


def shared_nic_links(placement: Placement) -> list[tuple]:
    """("nic", id) of the NICs a job leaving its machine sends through, where NICs are shared by
    GPUs (another job may be on the same NIC); [] otherwise."""
    topology = placement.topology
    if not topology.shared_nics or len(placement.gpus_by_machine) < 2:
        return []
    return [("nic", n) for n in sorted({topology.nic_of(g) for g in placement.gpus})]


def contention_components(placements: Mapping[str, Placement]) -> list[list[str]]:
    """Job ids grouped into components, each component's jobs in the mapping's order, components in
    the order of their first job; jobs under one leaf (one rack without rails) are components of one."""
    return groups_sharing({job: list(shared_uplinks(placement)) + shared_nic_links(placement)
                           for job, placement in placements.items()})
