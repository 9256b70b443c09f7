"""Shared contention in the elastic loop: jobs that meet on links are timed together, once per round.

    contention = SharedContention(cluster, fabrics, apps, profiles)
    steps = contention.round_steps([RoundJob(job_id, app, gpu_type, alloc, local_batch), ...])
        -> {job_id: shared step seconds}   (only jobs in a contention component of two or more)

The elastic loop's default (isolated) times every job alone on its placement (PooledStepTimer /
NetworkStepTimer). With `contention: shared` (ElasticJobs.share_round, artist/elastic/jobs.py), every round, after the
allocation is applied:

- every running job gets real GPUs in its pool (node -> machine -> rack from ElasticCluster.nodes): a job
  keeps its GPU ids while its allocation is unchanged; a job whose allocation changed takes, on each of its
  machines, the lowest free GPU ids, jobs in the loop's order (deterministic);
- per pool (pools never share links: each is its own fabric), the running jobs are grouped by the rigid
  loop's contention_components (artist/perf/contention.py: jobs spanning leaves with a leaf in common,
  jobs on a shared NIC);
- a component of one is absent from the answer: the loop times it alone as in isolated mode (the timer's
  memo, the same numbers);
- a component of two or more is timed together in steady state by the pool's fabric exactly as the rigid
  loop's PerfModel.shared does (perf/model.py shared_steady_estimates: each job's DDP step graph on its own
  GPUs, as the timer builds it today: ddp_step of its model profile at its local batch's measured compute),
  memoised per (pool, the component's (application, local batch, GPU ids)) so a configuration seen before is
  not co-simulated again.

A mixed-type (collapsed) allocation, which only a heterogeneity-unaware policy makes, spans pools that are
separate fabrics: it is timed alone as today (PooledStepTimer's collapsed layout) and is no co-runner of any
component (its traffic has no place in one pool's fabric); its GPUs are still held, so nobody else gets their
ids. Every backend shows slowdowns: the contention model of record (the phase model, artist/network/phase/)
shares the links among the component's collectives with each one's alone time from the pool's fabric, as
in the rigid loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from artist.elastic.measured import MeasuredApplication
from artist.network.base import FabricModel
from artist.network.provenance import AnswerCounts
from artist.parallel.ddp import ddp_step
from artist.perf.contention import contention_components
from artist.perf.model import shared_steady_estimates
from artist.placement import Placement
from artist.workload import ModelProfile

MAX_MEMO = 100_000  # components are combinatorial: keep the memo bounded (as PerfModel.shared)


@dataclass(frozen=True)
class RoundJob:
    job_id: str
    app: str
    alloc: np.ndarray   # GPUs per node of the cluster (the loop's allocation)
    local_batch: int


class SharedContention:
    def __init__(self, cluster, fabrics: Mapping[str, FabricModel], apps: Mapping[str, MeasuredApplication],
                 profiles: Mapping[str, ModelProfile]):
        """cluster: the ElasticCluster whose nodes are the loop's nodes (virtual nodes included); fabrics:
        the network model of each pool, by GPU type."""
        missing = [p.gpu_type for p in cluster.pools if p.gpu_type not in fabrics]
        if missing:
            raise ValueError(f"no fabric for pool(s) {', '.join(missing)}")
        self.cluster, self.fabrics, self.apps, self.profiles = cluster, fabrics, apps, profiles
        self._held: dict[str, tuple[bytes, dict[tuple[int, int], tuple[int, ...]]]] = {}
        self._memo: dict = {}
        self.components_asked = 0   # components of two or more met, round by round
        self.components_timed = 0   # ... of which were co-simulated (not in the memo)
        self.answers = AnswerCounts()  # which path answered each co-simulated job (network/provenance.py)

    def _machine_counts(self, alloc: np.ndarray) -> dict[tuple[int, int], int]:
        counts: dict[tuple[int, int], int] = {}
        for node, c in zip(self.cluster.nodes, alloc):
            if c > 0:
                counts[(node.pool, node.machine)] = counts.get((node.pool, node.machine), 0) + int(c)
        return counts

    def place(self, jobs: Sequence[RoundJob]) -> dict[str, dict[tuple[int, int], tuple[int, ...]]]:
        """Each job's GPU indices within each (pool, machine) it holds (see the module docstring)."""
        now = {j.job_id: np.asarray(j.alloc, dtype=int) for j in jobs if int(np.sum(j.alloc)) > 0}
        for job_id in list(self._held):
            if job_id not in now or self._held[job_id][0] != now[job_id].tobytes():
                del self._held[job_id]
        taken: dict[tuple[int, int], set[int]] = {}
        for _, machines in self._held.values():
            for where, ids in machines.items():
                taken.setdefault(where, set()).update(ids)
        for job in jobs:
            if job.job_id not in now or job.job_id in self._held:
                continue
            machines = {}
            for (pool, machine), count in self._machine_counts(now[job.job_id]).items():
                per = self.cluster.pools[pool].topology.gpus_per_machine
                used = taken.setdefault((pool, machine), set())
                free = [g for g in range(per) if g not in used][:count]
                if len(free) < count:
                    raise ValueError(f"job {job.job_id}: {count} GPUs on machine {machine} of pool {pool}, "
                                     f"{per - len(used)} free")
                used.update(free)
                machines[(pool, machine)] = tuple(free)
            self._held[job.job_id] = (now[job.job_id].tobytes(), machines)
        return {job_id: held[1] for job_id, held in self._held.items()}

    def round_steps(self, jobs: Sequence[RoundJob]) -> dict[str, float]:
        """The shared step seconds of every job in a contention component of two or more (module docstring)."""
        held = self.place(jobs)
        by_job = {j.job_id: j for j in jobs}
        per_pool: dict[int, dict[str, Placement]] = {}
        for job in jobs:
            machines = held.get(job.job_id)
            if not machines:
                continue
            pools = {pool for pool, _ in machines}
            if len(pools) != 1:
                continue  # a collapsed mixed-type allocation: timed alone (module docstring)
            pool = pools.pop()
            topo = self.cluster.pools[pool].topology
            gpus = tuple(m * topo.gpus_per_machine + g for (_, m), ids in sorted(machines.items()) for g in ids)
            per_pool.setdefault(pool, {})[job.job_id] = Placement(topo, gpus)
        out: dict[str, float] = {}
        for pool, placements in sorted(per_pool.items()):
            for component in contention_components(placements):
                if len(component) < 2:
                    continue
                self.components_asked += 1
                out.update(self._component(pool, {j: (by_job[j], placements[j]) for j in component}))
        return out

    def _component(self, pool: int, jobs: Mapping[str, tuple[RoundJob, Placement]]) -> dict[str, float]:
        gpu_type = self.cluster.pools[pool].gpu_type
        key = (pool,) + tuple((job.app, job.local_batch, placement.gpus) for job, placement in jobs.values())
        steps = self._memo.get(key)
        if steps is None:
            self.components_timed += 1
            timed = {}
            for i, (job, placement) in enumerate(jobs.values()):
                compute = float(self.apps[job.app].compute[gpu_type](job.local_batch))
                timed[str(i)] = (ddp_step(self.profiles[job.app], placement, compute), compute, placement.topology)
            estimates = shared_steady_estimates(self.fabrics[gpu_type], timed)
            for estimate in estimates.values():
                self.answers.record(estimate.comm)
            steps = tuple(estimates[str(i)].step_seconds for i in range(len(jobs)))
            if len(self._memo) >= MAX_MEMO:
                self._memo.clear()
            self._memo[key] = steps
        return dict(zip(jobs, steps))
