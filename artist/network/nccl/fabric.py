"""NCCL's view of a placement on an ArtISt topology: the machine description its tuner's inputs come from.

NCCL's topology search sees one node at a time: its GPUs, how they talk (NVLink through an NVSwitch, or
PCIe), the NICs near them and their speed, and how many nodes take part. The fabric above the NICs is
not in its model (it assumes the network carries what the NICs send); contention between jobs on that
fabric is the flow and ns-3 backends' concern, not this one's.

What an ArtISt topology does not state is read as follows (each an assumption, said where it is made):
- the GPU's architecture from its type's name (compute capability, NVIDIA's CUDA GPU table); NCCL uses
  the lowest compute capability of the communicator, so a mixed placement takes its oldest GPU;
- NVLink: a machine tier faster than 1.5x the architecture's PCIe x16 figure is NVLink, its links the
  tier's bandwidth over one link's line rate; machines of 8 or more NVLink GPUs are NVSwitch boards
  (HGX/DGX A100, H100, B200, DGX-2), smaller ones direct NVLink meshes;
- the NICs a placement uses on a machine: the distinct NICs of its GPUs there (NCCL picks the NIC
  nearest each GPU); their speed: the rack tier's link bandwidth.
"""

from __future__ import annotations

import dataclasses

from artist.network.nccl.inputs import TunerInputs
from artist.network.nccl.releases import NcclRelease, V2_30_7
from artist.network.nccl.search import _PCIE_DEFAULT, Machine, nvlink_gbs_of, tuner_inputs
from artist.placement import Placement

# GPU type name -> (NCCL's architecture row, compute capability). NCCL's tuner indexes its tables by
# compute capability: < 8.0 the Volta row, < 9.0 Ampere, < 10.0 Hopper, else Blackwell (tuning.cc,
# compCapIndex). Compute capabilities: NVIDIA, "CUDA GPUs - Compute Capability" (developer.nvidia.com).
GPU_ARCH: dict[str, tuple[str, int]] = {
    "V100": ("volta", 70), "T4": ("volta", 75),
    "A100": ("ampere", 80), "A10": ("ampere", 86), "A40": ("ampere", 86),
    "H100": ("hopper", 90), "H200": ("hopper", 90),
    "B200": ("blackwell", 100), "GB200": ("blackwell", 100),
}

# One NVLink's line rate per direction, GB/s: NVLink 2/3/4 25 GB/s a link (V100 6 links = 150, A100 12 = 300,
# H100 18 = 450 GB/s per direction), NVLink 5 50 GB/s (B200 18 links = 900). NVIDIA V100, A100, H100 and
# B200 datasheets.
NVLINK_LINK_LINE_GBS = {"volta": 25.0, "ampere": 25.0, "hopper": 25.0, "blackwell": 50.0}
NVLINK_OVER_PCIE = 1.5  # a machine tier this much faster than PCIe x16 is NVLink (assumption; see above)
NVSWITCH_MIN_GPUS = 8  # NVLink machines this size or larger carry NVSwitches (assumption; see above)


def gpu_arch(gpu_type: str, where: str = "GPU type") -> tuple[str, int]:
    """(NCCL's architecture row, compute capability) of a GPU type name; ValueError naming the known ones."""
    found = GPU_ARCH.get(gpu_type)
    if found is None:
        raise ValueError(f"{where} {gpu_type!r}: NCCL's tables need its architecture; known GPU types: "
                         f"{', '.join(GPU_ARCH)}")
    return found


def machine_of(placement: Placement) -> tuple[Machine, int]:
    """(the Machine NCCL's search would see for this placement, its number of ranks). A placement with
    different GPU counts per machine is described by its busiest machine (the one that bounds a ring's
    channels), with its true rank count beside."""
    topology = placement.topology
    by_machine = placement.gpus_by_machine
    archs = [gpu_arch(topology.gpu_type_of_machine(m)) for m in by_machine]
    arch, _ = min(archs, key=lambda a: a[1])  # NCCL: the communicator's minimum compute capability
    busiest = max(by_machine.values(), key=len)
    nodes = len(by_machine)
    nics = len({topology.nic_index(g) for g in busiest}) if nodes > 1 else 0
    nic_gbs = topology.rack.bytes_per_second / 1e9 if nodes > 1 else 0.0
    machine_gbs = topology.machine.bytes_per_second / 1e9
    nvlink = topology.gpus_per_machine > 1 and machine_gbs > NVLINK_OVER_PCIE * _PCIE_DEFAULT[arch]
    links = max(1, round(machine_gbs / NVLINK_LINK_LINE_GBS[arch])) if nvlink else 0
    machine = Machine(arch, len(busiest), nodes, nics, nic_gbs,
                      nvlink_gbs=nvlink_gbs_of(arch, links) if nvlink else 0.0,
                      nvswitch=nvlink and topology.gpus_per_machine >= NVSWITCH_MIN_GPUS)
    return machine, placement.size


def inputs_of(placement: Placement, release: NcclRelease = V2_30_7) -> TunerInputs:
    """What NCCL's tuner reads for a communicator on these GPUs (search.tuner_inputs on machine_of)."""
    machine, ranks = machine_of(placement)
    inputs = tuner_inputs(machine, release)
    return inputs if inputs.n_ranks == ranks else dataclasses.replace(inputs, n_ranks=ranks)


__all__ = ["GPU_ARCH", "gpu_arch", "inputs_of", "machine_of"]
