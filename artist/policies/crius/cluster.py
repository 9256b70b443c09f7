"""Crius' clusters as pools of one GPU type each, and GPU placement inside a pool.

    cluster = crius_cluster("crius-1280")          # {gpu type: Pool}; also "crius-testbed"
    alloc = PoolAllocator(cluster["A40"].topology); gpus = alloc.take(8)   # None when it does not fit

Clusters (the topology files carry the links and say which rates are chosen):
- crius-1280: Crius Table 1, the simulated 1,280-GPU cluster: A100 80 x 4, A40 160 x 2, A10 160 x 2,
  V100 20 x 16 (memory per GPU from the same table: A100 40 GB, A40 48 GB, A10 24 GB, V100 32 GB);
- crius-testbed: the 64-GPU testbed of sec. 8.1: 16 x 2 A40 (48 GB) and 16 x 2 A10 (24 GB).
GB read as GiB (the cards' 40/48/24/32 GB are binary sizes, e.g. the A100-40GB's 40,536 MiB).

Placement (the paper leaves VirtualAlloc's rules open, digest 3.7 item 3): a job that fits in one
machine goes to the machine with the fewest free GPUs that still holds it (best fit, so whole machines
stay free for large jobs); a larger job takes whole free machines when there are enough, else the GPUs
of the machines with the most free GPUs (a fragmented placement, which the ground truth then pays for).
GPUs are listed machine by machine, which is how truth.py lays stages out.
"""

from __future__ import annotations

from artist import shipped
from artist.perf.accelerators import accelerator
from artist.policies.crius.cells import Pool
from artist.topology import load_topology

GIB = 1 << 30
TOPOLOGY_DIR = shipped.TOPOLOGIES_DIR  # the pools' files below

# (GPU type, topology file, memory per GPU in GiB): Crius Table 1 / sec. 8.1
CLUSTERS = {
    "crius-1280": (("A100", "crius-a100.yaml", 40), ("A40", "crius-a40.yaml", 48), ("A10", "crius-a10.yaml", 24),
                   ("V100", "crius-v100.yaml", 32)),
    "crius-testbed": (("A40", "crius-testbed-a40.yaml", 48), ("A10", "crius-testbed-a10.yaml", 24)),
}


def crius_cluster(name: str) -> dict[str, Pool]:
    try:
        spec = CLUSTERS[name]
    except KeyError:
        raise KeyError(f"unknown Crius cluster {name!r}; known: {', '.join(CLUSTERS)}") from None
    return {gpu_type: Pool(gpu_type, load_topology(TOPOLOGY_DIR / path), accelerator(gpu_type), gib * GIB)
            for gpu_type, path, gib in spec}


class PoolAllocator:
    """Free GPUs per machine of one pool; take() / give() whole placements."""

    def __init__(self, topology):
        self.topology = topology
        per = topology.gpus_per_machine
        self.free = {m: list(range(m * per, (m + 1) * per)) for m in range(topology.machines)}

    @property
    def free_gpus(self) -> int:
        return sum(len(v) for v in self.free.values())

    def take(self, gpus: int) -> tuple[int, ...] | None:
        per = self.topology.gpus_per_machine
        if gpus > self.free_gpus:
            return None
        if gpus <= per:
            fits = [m for m, v in self.free.items() if len(v) >= gpus]
            if fits:
                m = min(fits, key=lambda k: (len(self.free[k]), k))
                return self._grab([(m, gpus)])
        whole = [m for m, v in self.free.items() if len(v) == per]
        if gpus % per == 0 and len(whole) >= gpus // per:
            return self._grab([(m, per) for m in whole[:gpus // per]])
        order = sorted(self.free, key=lambda k: (-len(self.free[k]), k))
        plan, left = [], gpus
        for m in order:
            if left == 0:
                break
            n = min(left, len(self.free[m]))
            if n:
                plan.append((m, n))
                left -= n
        return self._grab(sorted(plan))

    def _grab(self, plan) -> tuple[int, ...]:
        out = []
        for m, n in plan:
            out.extend(self.free[m][:n])
            del self.free[m][:n]
        return tuple(out)

    def give(self, gpus) -> None:
        for g in gpus:
            m = self.topology.machine_of(g)
            if g in self.free[m]:
                raise ValueError(f"GPU {g} given back twice")
            self.free[m].append(g)
            self.free[m].sort()
