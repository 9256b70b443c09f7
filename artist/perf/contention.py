"""Which running jobs can slow each other down: contention components.

GPUs belong to one job at a time, and so do their NVSwitch ports and NICs
(one NIC per GPU in every topology here); the only links two jobs can share
are the spine's: a rack's uplink bundle (``bundle``) or its uplink ports
(``ecmp``). A job confined to one rack never crosses them; jobs spanning
racks share a link only if they have a rack in common. So a component is a
set of rack-spanning jobs connected through common racks; every other job is
alone. (On an ecmp spine two jobs on a common rack may still hash onto
disjoint ports: the co-simulation of their component then shows no slowdown,
a component is an upper bound on who interacts, never a miss.)
"""

from __future__ import annotations

from typing import Mapping

from artist.placement import Placement


def contention_components(placements: Mapping[str, Placement]) -> list[list[str]]:
    """Job ids grouped into components, each component's jobs in the mapping's order, components in
    the order of their first job; single-rack jobs are components of one."""
    parent: dict[str, str] = {}
    order = {job: i for i, job in enumerate(placements)}

    def find(job: str) -> str:
        while parent[job] != job:
            parent[job] = parent[parent[job]]
            job = parent[job]
        return job

    first_on_rack: dict[int, str] = {}
    for job, placement in placements.items():
        parent[job] = job
        racks = placement.racks
        if len(racks) < 2:
            continue
        for rack in racks:
            other = first_on_rack.setdefault(rack, job)
            a, b = find(job), find(other)
            if a != b:
                parent[max(a, b, key=order.get)] = min(a, b, key=order.get)
    groups: dict[str, list[str]] = {}
    for job in placements:
        groups.setdefault(find(job), []).append(job)
    return list(groups.values())
