"""What a network answer depends on: the placement up to the fabric's symmetries.

``bundle`` spine: the topology is symmetric under any renumbering of racks, of
machines inside a rack and of GPUs inside a machine, so a job alone depends
only on its canonical shape (placement.py) and is timed on
placement_from_shape(shape).

``ecmp`` spine, rail-optimised racks, or NICs shared by some GPUs of a machine
(GPUs 0 and 1 on one NIC are not GPUs 0 and 2 on two): the hash (ecmp.py) sees each GPU's
position inside its rack, a rail is a NIC index inside its machine, and a
shared NIC ties GPUs together, so machines and GPUs cannot be renumbered; racks can, and the ring order follows
rack ids, so the renumbering keeps their order: the racks used become racks
0, 1, ... in the same order, each GPU keeping its position inside its rack.
That is still a topology automorphism for every question (any two placements
with one form get one answer), with less reuse than shapes.
"""

from __future__ import annotations

from typing import Hashable, Iterable

from artist.placement import Placement, placement_from_shape
from artist.topology import Topology


def shape_symmetric(topology: Topology) -> bool:
    """True when a placement's canonical shape is all an answer depends on (bundle spine, one switch
    per rack, and GPUs of a machine interchangeable: a NIC each, or one NIC for all); else only racks
    may be renumbered (ecmp_gpu_map)."""
    nics_symmetric = not topology.shared_nics or topology.nics == 1
    return topology.spine_model == "bundle" and not topology.rails and nics_symmetric


def ecmp_gpu_map(topology: Topology, gpus: Iterable[int]) -> dict[int, int]:
    """GPU -> GPU with the used racks renumbered 0, 1, ... in order, positions inside racks kept."""
    per_rack = topology.gpus_per_rack
    racks = sorted({g // per_rack for g in gpus})
    new_rack = {r: i for i, r in enumerate(racks)}
    return {g: new_rack[g // per_rack] * per_rack + g % per_rack for g in gpus}


def fabric_key(placement: Placement) -> Hashable:
    """The memo key of a placement's form: its canonical shape on a bundle spine (a cached
    property: this is the simulator's hot path), its racks' GPU positions on an ecmp spine."""
    topology = placement.topology
    if shape_symmetric(topology):
        return placement.canonical_shape
    per_rack = topology.gpus_per_rack
    return ("ecmp",) + tuple(tuple(g % per_rack for gs in (placement.gpus_by_machine[m] for m in machines) for g in gs)
                             for machines in placement.machines_by_rack.values())


def fabric_form(placement: Placement) -> tuple[Hashable, Placement]:
    """(memo key, a placement standing for every placement with that key)."""
    topology = placement.topology
    if shape_symmetric(topology):
        shape = placement.canonical_shape
        return shape, placement_from_shape(topology, shape)
    mapping = ecmp_gpu_map(topology, placement.gpus)
    return fabric_key(placement), Placement(topology, tuple(sorted(mapping.values())))
