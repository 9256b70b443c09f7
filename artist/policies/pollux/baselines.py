"""Baselines Pollux is compared with, for the elastic loop (artist/elastic/simulation.py).

TiresiasRigid: Tiresias (Gu et al., NSDI'19) as Pollux's simulator runs it (digest 1.7; petuum/adaptdl
osdi21-artifact simulator/tiresias.py, read for its settings): two priority queues by attained GPU
service (a job moves to the second queue once it has used 16 GPU-hours; no promotion, "PromoteKnob
off"), first-come first-served within a queue; in queue order every job whose GPU count still fits the
free total runs (later, smaller jobs may pass a blocked one); a running job keeps its GPUs, a new one
takes them node by node from the node with the most free GPUs (consolidated); a job no longer chosen is
preempted. Each job runs its own fixed GPU count and batch (the workload's TunedJobs columns).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from artist.policies.pollux.scheduler import JobView

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
        out = {j.job_id: np.zeros(len(self.capacity), dtype=int) for j in jobs}
        free = self.capacity.copy()
        keep = {j.job_id for j in chosen if int(np.asarray(j.current).sum()) == j.gpus_wanted}
        for job in chosen:
            if job.job_id in keep:
                out[job.job_id] = np.asarray(job.current, dtype=int).copy()
                free -= out[job.job_id]
        for job in chosen:
            if job.job_id in keep:
                continue
            row = out[job.job_id]
            need = job.gpus_wanted
            while need > 0:
                node = int(np.argmax(free))  # the most free GPUs; ties: the lowest index
                take = min(int(free[node]), need)
                row[node] += take
                free[node] -= take
                need -= take
        return out
