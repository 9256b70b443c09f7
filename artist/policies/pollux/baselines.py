"""Baselines Pollux is compared with, as elastic allocators (artist/elastic/allocators.py).

TiresiasRigid: Tiresias (Gu et al., NSDI'19) as Pollux's simulator runs it (digest 1.7; petuum/adaptdl
osdi21-artifact simulator/tiresias.py, read for its settings): two priority queues by attained GPU
service (a job moves to the second queue once it has used 16 GPU-hours; no promotion, "PromoteKnob
off"), first-come first-served within a queue; in queue order every job whose GPU count still fits the
free total runs (later, smaller jobs may pass a blocked one); a running job keeps its GPUs, a new one
takes them node by node from the node with the most free GPUs (consolidated); a job no longer chosen is
preempted. Each job runs its own fixed GPU count and batch (the workload's TunedJobs columns, or the artifact's
"realistic" ones: the trace's GPU count and M0 x GPUs).

OptimusOracle: Optimus (Peng et al., EuroSys'18) as Pollux evaluates it (paper section 5.2, "Optimus+Oracle";
digest 1.7; settings read from the artifact's simulator/optimus.py): each job keeps its workload batch and
the policy picks only its GPU count. Every job first gets one GPU, in arrival order, while GPUs remain;
then GPUs go one at a time to the job with the largest marginal gain

    gain_j(k) = (T_j(k) - T_j(k + 1)) x remaining iterations_j

(T_j(k): the predicted seconds per iteration at the job's batch on k GPUs over ceil(k / GPUs per node)
nodes, with the same split into local batch and accumulation passes as the job would run), until no GPU
or no positive gain remains. Remaining iterations are exact (the "Oracle": from the job's measured
curves at its batch, artist/elastic/oracle.py). Where ours differs from the artifact, [I]:
- T_j comes from the job's own fitted Pollux throughput model (its PolluxAgent), as the paper says;
  the artifact's code reads the measured step-time table instead (a stronger oracle). Before a job has
  observed anything it has no model and stays at one GPU for that round.
- Each job's cap is min(batch / smallest local batch (the artifact's), its agent's 2x exploration rule):
  the fitted model cannot be trusted far beyond what the job has run on.
Placement as the artifact: a job whose GPU count is unchanged keeps its GPUs; the others, fewest GPUs
first, take them node by node from the node with the most free GPUs (ties: the lowest index).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from artist.elastic.spec import clamp_local_batch, split_batch
from artist.policies.pollux.scheduler import JobView
from artist.policies.pollux.throughput import iteration_seconds

# The artifact's queue threshold: 16 GPU-hours of attained service (tiresias.py, _queue_threshold).
TIRESIAS_THRESHOLD_GPU_SECONDS = 16 * 3600.0


class TiresiasRigid:
    def __init__(self, capacity: Sequence[int], threshold_gpu_seconds: float = TIRESIAS_THRESHOLD_GPU_SECONDS):
        if len(capacity) == 0 or min(capacity) < 1:
            raise ValueError("capacity: every node needs at least one GPU")
        self.capacity = np.array(capacity, dtype=int)
        self.threshold = float(threshold_gpu_seconds)
        self._demoted: set[str] = set()
        self._arrival_order: dict[str, int] = {}

    def allocate(self, jobs: Sequence[JobView]) -> dict[str, np.ndarray]:
        for job in jobs:
            if job.gpus_wanted < 1:
                raise ValueError(f"job {job.job_id}: Tiresias needs the job's GPU count (gpus_wanted)")
            self._arrival_order.setdefault(job.job_id, len(self._arrival_order))
            if job.attained >= self.threshold:
                self._demoted.add(job.job_id)
        order = sorted(jobs, key=lambda j: (j.job_id in self._demoted, self._arrival_order[j.job_id]))
        budget = int(self.capacity.sum())
        chosen = []
        for job in order:
            if job.gpus_wanted <= budget:
                chosen.append(job)
                budget -= job.gpus_wanted
        return _place(self.capacity, jobs, {j.job_id: j.gpus_wanted for j in chosen})


def _place(capacity: np.ndarray, jobs: Sequence[JobView], counts: dict[str, int]) -> dict[str, np.ndarray]:
    """GPUs per node for each job given its GPU count (jobs not in counts, or with 0, get none): a job
    whose count is unchanged keeps its GPUs; the others, in the given order, take GPUs node by node from
    the node with the most free GPUs (ties: the lowest index)."""
    out = {j.job_id: np.zeros(len(capacity), dtype=int) for j in jobs}
    free = np.array(capacity, dtype=int)
    keep = {j.job_id for j in jobs if counts.get(j.job_id, 0) > 0
            and int(np.asarray(j.current).sum()) == counts[j.job_id]}
    for job in jobs:
        if job.job_id in keep:
            out[job.job_id] = np.asarray(job.current, dtype=int).copy()
            free -= out[job.job_id]
    for job_id, need in counts.items():
        if job_id in keep or need <= 0:
            continue
        row = out[job_id]
        while need > 0:
            node = int(np.argmax(free))  # the most free GPUs; ties: the lowest index
            take = min(int(free[node]), need)
            if take <= 0:
                raise ValueError(f"job {job_id}: no free GPU left to place (counts exceed the capacity)")
            row[node] += take
            free[node] -= take
            need -= take
    return out


class OptimusOracle:
    """Optimus+Oracle (module docstring). Reads JobView.batch_wanted (the job's fixed batch) and
    JobView.remaining_iterations (the oracle), which the elastic simulation fills in when the policy
    says wants_oracle."""
    wants_oracle = True

    def __init__(self, capacity: Sequence[int]):
        if len(capacity) == 0 or min(capacity) < 1:
            raise ValueError("capacity: every node needs at least one GPU")
        self.capacity = np.array(capacity, dtype=int)
        self.gpus_per_node = int(self.capacity.max())

    def step_seconds(self, job: JobView, replicas: int) -> float | None:
        """Predicted seconds per iteration of the job's batch on `replicas` GPUs (None: no model yet,
        or the batch cannot be split over that many GPUs)."""
        agent = job.agent
        params = agent.params
        if params is None:
            return None
        split = split_batch(job.batch_wanted, replicas, agent.limit, agent.spec.initial_batch)
        if split is None:
            return None
        m, s = split
        m = clamp_local_batch(m, s, replicas, agent.spec, agent.limit)  # the clamp the simulation applies
        nodes = math.ceil(replicas / self.gpus_per_node)
        return float(iteration_seconds(params, nodes, replicas, m, s))

    def cap(self, job: JobView) -> int:
        return max(1, min(job.batch_wanted // job.agent.limit.min_local, job.agent.max_gpus))

    def _gain(self, job: JobView, k: int) -> float:
        if k + 1 > self.cap(job):
            return 0.0
        now, more = self.step_seconds(job, k), self.step_seconds(job, k + 1)
        if now is None or more is None:
            return 0.0
        return (now - more) * job.remaining_iterations

    def allocate(self, jobs: Sequence[JobView]) -> dict[str, np.ndarray]:
        for job in jobs:
            if job.batch_wanted < 1:
                raise ValueError(f"job {job.job_id}: Optimus needs the job's batch (batch_wanted)")
        free = int(self.capacity.sum())
        counts: dict[str, int] = {}
        gains: dict[str, float] = {}
        by_id = {j.job_id: j for j in jobs}
        for job in sorted(jobs, key=lambda j: (j.submitted, j.job_id)):  # first GPUs in arrival order
            if free < 1:
                counts[job.job_id], gains[job.job_id] = 0, 0.0
                continue
            counts[job.job_id] = 1
            free -= 1
            gains[job.job_id] = self._gain(job, 1)
        while free > 0 and gains and max(gains.values()) > 0:
            best = max(gains, key=lambda k: (gains[k], -by_id[k].submitted))  # ties: the earlier job
            counts[best] += 1
            free -= 1
            gains[best] = self._gain(by_id[best], counts[best])
        order = sorted(jobs, key=lambda j: (counts[j.job_id], j.submitted, j.job_id))  # fewest GPUs first
        return _place(self.capacity, order, {j.job_id: counts[j.job_id] for j in order})
