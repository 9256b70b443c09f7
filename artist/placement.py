"""A job's placement (which GPUs) and its canonical shape.

The shape is what the network model's answer depends on for a job running
alone: GPU counts per machine, grouped per rack, sorted so that placements
differing only in *which* machines or racks were picked share one shape.
Example: ((4, 4), (8,)) is 16 GPUs on two racks, the first with two machines
of four GPUs each, the second with one full machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

from artist.topology import Topology

MACHINE, RACK, NETWORK = "machine", "rack", "network"
TIER_ORDER = {MACHINE: 0, RACK: 1, NETWORK: 2}

Shape = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Placement:
    topology: Topology
    gpus: tuple[int, ...]  # sorted global GPU ids

    def __post_init__(self):
        gpus = tuple(sorted(self.gpus))
        if not gpus:
            raise ValueError("a placement needs at least one GPU")
        if len(set(gpus)) != len(gpus):
            raise ValueError(f"placement lists a GPU twice: {gpus}")
        if gpus[0] < 0 or gpus[-1] >= self.topology.gpus:
            raise ValueError(f"GPU ids must be in [0, {self.topology.gpus}), got {gpus}")
        object.__setattr__(self, "gpus", gpus)

    def __hash__(self):
        return hash(self.gpus)

    def __eq__(self, other):
        return isinstance(other, Placement) and self.gpus == other.gpus and self.topology == other.topology

    # size and tier are read many times per scheduling round: computed once (like the shapes below).
    @cached_property
    def size(self) -> int:
        return len(self.gpus)

    @cached_property
    def gpus_by_machine(self) -> dict[int, tuple[int, ...]]:
        out: dict[int, list[int]] = {}
        for g in self.gpus:
            out.setdefault(self.topology.machine_of(g), []).append(g)
        return {m: tuple(v) for m, v in out.items()}

    @cached_property
    def machines_by_rack(self) -> dict[int, tuple[int, ...]]:
        out: dict[int, list[int]] = {}
        for m in self.gpus_by_machine:
            out.setdefault(self.topology.rack_of_machine(m), []).append(m)
        return {r: tuple(v) for r, v in out.items()}

    @property
    def machines(self) -> tuple[int, ...]:
        return tuple(self.gpus_by_machine)

    @property
    def racks(self) -> tuple[int, ...]:
        return tuple(self.machines_by_rack)

    @cached_property
    def tier(self) -> str:
        if len(self.gpus_by_machine) == 1:
            return MACHINE
        if len(self.machines_by_rack) == 1:
            return RACK
        return NETWORK

    @cached_property
    def canonical_shape(self) -> Shape:
        racks = [
            tuple(sorted((len(self.gpus_by_machine[m]) for m in machines), reverse=True))
            for machines in self.machines_by_rack.values()
        ]
        return tuple(sorted(racks, key=lambda r: (-sum(r), tuple(-x for x in r), len(r))))

    @cached_property
    def gpu_type_counts(self) -> tuple[tuple[str, int], ...]:
        counts: dict[str, int] = {}
        for m, gs in self.gpus_by_machine.items():
            t = self.topology.gpu_type_of_machine(m)
            counts[t] = counts.get(t, 0) + len(gs)
        return tuple(sorted(counts.items()))

    def slowest_gpu_speed(self) -> float:
        return min(self.topology.gpu_type(t).relative_speed for t, _ in self.gpu_type_counts)

    def ranks_in_ring_order(self) -> list[int]:
        """GPUs grouped by rack, then machine: the order a topology-aware ring uses."""
        return [g for r in self.machines_by_rack.values() for m in r for g in self.gpus_by_machine[m]]

    def __repr__(self):
        return f"Placement({self.tier}, shape={shape_to_text(self.canonical_shape)}, gpus={len(self.gpus)})"


def placement_from_shape(topology: Topology, shape: Sequence[Sequence[int]], first_rack: int = 0) -> Placement:
    """Lay a shape out on the topology: rack i of the shape on rack first_rack + i,
    machine j of a rack on that rack's machine j, GPUs from local index 0."""
    shape = normalise_shape(shape)
    if first_rack + len(shape) > topology.racks:
        raise ValueError(f"shape {shape_to_text(shape)} needs {len(shape)} racks from rack {first_rack}; "
                         f"topology has {topology.racks}")
    gpus: list[int] = []
    for i, machines in enumerate(shape):
        rack = first_rack + i
        if len(machines) > topology.machines_per_rack:
            raise ValueError(f"shape rack {i} has {len(machines)} machines; a rack holds {topology.machines_per_rack}")
        for j, count in enumerate(machines):
            if count > topology.gpus_per_machine:
                raise ValueError(f"shape asks {count} GPUs on a machine of {topology.gpus_per_machine}")
            machine = rack * topology.machines_per_rack + j
            base = machine * topology.gpus_per_machine
            gpus.extend(range(base, base + count))
    return Placement(topology, tuple(gpus))


def normalise_shape(shape: Iterable[Iterable[int]]) -> Shape:
    racks = []
    for rack in shape:
        machines = tuple(int(x) for x in rack)
        if not machines or any(x < 1 for x in machines):
            raise ValueError(f"every rack of a shape needs machines with >= 1 GPU, got {list(rack)}")
        racks.append(machines)
    if not racks:
        raise ValueError("a shape needs at least one rack")
    return tuple(racks)


def parse_shape(text: str) -> Shape:
    """Parse '[[4,4],[8]]' (racks -> machines -> GPU counts)."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"shape {text!r} is not a JSON list of lists: {exc.msg}") from None
    except RecursionError:
        raise ValueError(f"shape {text[:40]!r}... is nested too deeply: racks of per-machine GPU counts") from None
    if not isinstance(value, list) or not all(isinstance(r, list) for r in value):
        raise ValueError(f"shape {text!r} must be a list of racks, each a list of per-machine GPU counts")
    return normalise_shape(value)


def shape_to_text(shape: Shape) -> str:
    return "[" + ",".join("[" + ",".join(str(x) for x in r) + "]" for r in shape) + "]"
