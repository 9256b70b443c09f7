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

Levels above the spine (topology ``levels``): racks of one block are not
interchangeable with racks of another (a ring between blocks crosses the
level above), so with ``group`` membership the used units are renumbered level
by level inside their parent block (top-level blocks 0, 1, ... in order, then
inside each the used blocks of the level below 0, 1, ..., down to racks),
positions inside racks kept. Every block of a level is then alike (whole
blocks: topology.py refuses a partial one), and the renumbering keeps id order,
so ring orders and hashes are unchanged. With an explicit membership file,
blocks differ in size and capacity: nothing is renumbered.
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
    return (topology.spine_model == "bundle" and not topology.rails and nics_symmetric
            and topology.hierarchy is None)


def ecmp_gpu_map(topology: Topology, gpus: Iterable[int]) -> dict[int, int]:
    """GPU -> GPU with the used racks renumbered 0, 1, ... in order (under levels above the spine: inside
    their blocks, module docstring), positions inside racks kept."""
    gpus = list(gpus)
    per_rack = topology.gpus_per_rack
    racks = sorted({g // per_rack for g in gpus})
    hierarchy = topology.hierarchy
    if hierarchy is None:
        new_rack = {r: i for i, r in enumerate(racks)}
    elif hierarchy.explicit:
        new_rack = {r: r for r in racks}
    else:
        new_rack = _renumber_in_blocks(hierarchy, racks)
    return {g: new_rack[g // per_rack] * per_rack + g % per_rack for g in gpus}


def _renumber_in_blocks(hierarchy, racks: list[int]) -> dict[int, int]:
    """Rack -> rack, the used units of every level numbered 0, 1, ... inside their parent block (regular
    membership: block b of level i holds units b x group .. of level i-1)."""
    groups = hierarchy.groups  # units per block, levels 1 .. top-1
    children: dict[tuple, dict[int, int]] = {}
    out = {}
    for rack in racks:  # in id order: every unit's rank among its used siblings keeps id order
        units = [hierarchy.block(rack, level) for level in range(len(groups), 0, -1)] + [rack]  # top-down
        prefix, new = (), 0
        for depth, unit in enumerate(units):
            siblings = children.setdefault(prefix, {})
            rank = siblings.setdefault(unit, len(siblings))
            new = rank if depth == 0 else new * groups[len(groups) - depth] + rank
            prefix += (unit,)
        out[rack] = new
    return out


def fabric_key(placement: Placement) -> Hashable:
    """The memo key of a placement's form: its canonical shape on a bundle spine (a cached
    property: this is the simulator's hot path), its racks' GPU positions on an ecmp spine."""
    topology = placement.topology
    if shape_symmetric(topology):
        return placement.canonical_shape
    if topology.hierarchy is not None:
        return ("fabric", tuple(sorted(ecmp_gpu_map(topology, placement.gpus).values())))
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
