"""Ground-truth iteration time of an elastic job: measured compute, synchronisation from ArtISt's network.

    T_iter(placement, m, s) = s x C(m) + DDP step(C(m), gradients over the placement)

C(m) is the measured forward + backward time of one GPU of the type at local batch m (the artifact's
step_time - sync_time, artist/elastic/measured.py). The synchronising pass is ArtISt's DDP step graph
(artist/parallel/ddp.py: gradient buckets all-reduced as backward produces them) timed by a FabricModel
on the placement's canonical shape (its machines' GPU counts, rack by rack), so the exposed communication
is the network model's, not the artifact's measured sync_time. Gradient sizes come from a model profile
standing in for the application (artist/workload/traces/pollux.py APPLICATIONS: ResNet-18 and ResNet-50
by name, stand-ins of the same Pollux size category for the others).

This is the simulator's side: policies never call it.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from artist.elastic.measured import MeasuredApplication
from artist.network.base import FabricModel
from artist.network.provenance import AnswerCounts
from artist.parallel.ddp import ddp_step
from artist.placement import placement_from_shape
from artist.topology import Topology
from artist.workload import ModelProfile


def rack_lists(topology: Topology, gpus_by_machine: Mapping[int, int]) -> list[list[int]]:
    """The racks of a job's machines, each its machines' GPU counts largest first (a placement shape's
    racks before the shape is sorted); machines with no GPU are left out."""
    racks: dict[int, list[int]] = {}
    for machine, count in gpus_by_machine.items():
        if count > 0:
            racks.setdefault(topology.rack_of_machine(machine), []).append(int(count))
    return [sorted(r, reverse=True) for r in racks.values()]


class NetworkStepTimer:
    def __init__(self, topology: Topology, fabric: FabricModel, apps: Mapping[str, MeasuredApplication],
                 profiles: Mapping[str, ModelProfile]):
        missing = sorted(set(apps) - set(profiles))
        if missing:
            raise ValueError(f"no model profile for application(s) {', '.join(missing)}")
        self.topology, self.fabric, self.apps, self.profiles = topology, fabric, apps, profiles
        self._memo: dict = {}
        self.answers = AnswerCounts()  # which path answered each question it asked (network/provenance.py)

    def seconds(self, app: str, gpu_type: str, per_node: Sequence[int], local_batch: int, accum_steps: int
                ) -> tuple[float, float]:
        """(iteration seconds, one pass's compute seconds) on GPUs per node `per_node` (node i: machine i of
        the topology, so machine i // machines_per_rack's rack; zeros ignored)."""
        counts = tuple(sorted((tuple(r) for r in rack_lists(self.topology, dict(enumerate(per_node)))),
                              reverse=True))
        if not counts:
            raise ValueError("an iteration needs at least one GPU")
        compute = float(self.apps[app].compute[gpu_type](local_batch))
        key = (app, gpu_type, counts, local_batch)
        step = self._memo.get(key)
        if step is None:
            if counts == ((1,),):
                step = compute  # one GPU: nothing to synchronise
            else:
                placement = placement_from_shape(self.topology, counts)
                graph = ddp_step(self.profiles[app], placement, compute)
                timing = self.fabric.time({"job": graph})["job"]
                self.answers.record(timing.result)
                step = max(timing.step_seconds, compute)
            self._memo[key] = step
        return accum_steps * compute + step, compute
