"""GavelPolicy: Gavel as an elastic allocator (run in the event loop by artist/elastic/allocators.py), for rigid jobs.

Each job has a fixed GPU count (its scale factor) and batch: Gavel+TunedJobs, the baseline Sia compares
(digest 2.6), takes both from the workload's TunedJobs columns (ElasticJobSpec gpus and batch, the same
jobs Tiresias+TunedJobs runs in artist/policies/pollux/baselines.py). Every round (run the loop with
round_seconds = GAVEL_ROUND_SECONDS, 360 s):

1. the throughput matrix of the jobs present (throughputs.py; a job is profiled once per type, when it
   first appears, by the profiler the caller gives; 0 where it cannot run);
2. the allocation X by the chosen LP (lp.py), recomputed only when the set of jobs changed;
3. the round's leases (rounds.py: priority X / fraction of rounds received, one queue over all types);
4. GPUs per node (rounds.place_on_nodes), keeping a re-picked job where it was.

leases="sia-artifact" accounts the leases and assigns the workers as the Sia artifact's Gavel does
(rounds.py SiaArtifactLeases, assign_workers), for the comparison with that simulator.

The cluster is a list of nodes, each with its GPU count and GPU type, so the same policy serves one type
(today's loop) and several. A job that can run on no type (its GPU count exceeds every type's GPUs, or
its profiled throughput is 0 everywhere) is refused with a clear error rather than left waiting forever.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from artist.policies.gavel.lp import SOLVERS, max_min_fairness, max_sum_throughput
from artist.policies.gavel.rounds import (GAVEL_RESET_SECONDS, GAVEL_ROUND_SECONDS, RoundLeases, SiaArtifactLeases,
                                          assign_workers, place_on_nodes)
from artist.policies.gavel.throughputs import ThroughputProfiler, throughput_matrix

OBJECTIVES = ("max_sum_throughput", "max_min_fairness")
LEASES = ("gavel", "sia-artifact")


class GavelPolicy:
    round_seconds = GAVEL_ROUND_SECONDS

    def __init__(self, capacity: Sequence[int], node_types: Sequence[str], profiler: ThroughputProfiler,
                 objective: str = "max_sum_throughput", normalise: bool = True,
                 reset_seconds: float = GAVEL_RESET_SECONDS, leases: str = "gavel", solver: str = "simplex"):
        if len(capacity) == 0 or min(capacity) < 1:
            raise ValueError("capacity: every node needs at least one GPU")
        if len(node_types) != len(capacity):
            raise ValueError(f"{len(capacity)} nodes but {len(node_types)} node types")
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        self.capacity = np.array(capacity, dtype=int)
        self.gpu_types = list(dict.fromkeys(node_types))   # in order of first appearance
        self.node_type = np.array([self.gpu_types.index(t) for t in node_types], dtype=int)
        self.type_gpus = np.array([self.capacity[self.node_type == k].sum() for k in range(len(self.gpu_types))])
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
        if solver != "simplex" and objective != "max_sum_throughput":
            raise ValueError("solver: interior is wired for the max_sum_throughput objective only")
        self.solver = solver
        if leases not in LEASES:
            raise ValueError(f"leases must be one of {', '.join(LEASES)}, got {leases!r}")
        self.profiler, self.objective, self.normalise = profiler, objective, normalise
        self.leases = RoundLeases(reset_seconds) if leases == "gavel" else SiaArtifactLeases()
        self._workers: dict[str, tuple] | None = None if leases == "gavel" else {}  # sia-artifact: job -> workers
        self._throughputs: dict[str, np.ndarray] = {}
        self._key: tuple | None = None
        self.allocation = np.zeros((0, len(self.gpu_types)))   # X of the jobs last seen, rows as job_ids
        self.job_ids: list[str] = []
        self.lp_seconds: list[float] = []

    def _rows(self, jobs) -> np.ndarray:
        new = [(j.job_id, j.gpus_wanted) for j in jobs if j.job_id not in self._throughputs]
        if new:
            matrix = throughput_matrix(new, self.gpu_types, self.type_gpus, self.profiler)
            for (job_id, gpus), row in zip(new, matrix):
                if not row.any():
                    raise ValueError(f"job {job_id}: it can run on no GPU type of this cluster ({gpus} GPUs; "
                                     f"types {dict(zip(self.gpu_types, self.type_gpus.tolist()))}, throughput 0 "
                                     "wherever it fits)")
                self._throughputs[job_id] = row
        return np.array([self._throughputs[j.job_id] for j in jobs]).reshape(len(jobs), len(self.gpu_types))

    def _solve(self, throughputs: np.ndarray, scale_factors: np.ndarray) -> np.ndarray:
        started = time.perf_counter()
        if self.objective == "max_sum_throughput":
            x = max_sum_throughput(throughputs, scale_factors, self.type_gpus, normalise=self.normalise,
                                   solver=self.solver)
        else:
            x = max_min_fairness(throughputs, scale_factors, self.type_gpus)
        self.lp_seconds.append(time.perf_counter() - started)
        return x

    def allocate(self, jobs) -> dict[str, np.ndarray]:
        """jobs: the loop's JobViews (job_id, current GPUs per node, gpus_wanted, submitted, age)."""
        for job in jobs:
            if job.gpus_wanted < 1:
                raise ValueError(f"job {job.job_id}: Gavel needs the job's GPU count (gpus_wanted), "
                                 "i.e. TunedJobs gpus and batch")
        if not jobs:
            return {}
        jobs = sorted(jobs, key=lambda j: (j.submitted, j.job_id))
        ids = [j.job_id for j in jobs]
        scale = np.array([j.gpus_wanted for j in jobs], dtype=int)
        throughputs = self._rows(jobs)
        present = set(ids)
        for job_id in [k for k in self._throughputs if k not in present]:
            del self._throughputs[job_id]
        key = (tuple(ids), tuple(scale.tolist()))
        if key != self._key:
            self.allocation, self.job_ids, self._key = self._solve(throughputs, scale), ids, key
        now = max(j.submitted + j.age for j in jobs)
        picks = self.leases.pick(ids, self.allocation, scale, throughputs > 0, self.type_gpus, now)
        current = {j.job_id: np.asarray(j.current, dtype=int) for j in jobs}
        if self._workers is not None:  # the Sia artifact's worker assignment, its workers kept between rounds
            picked = dict(zip(ids, picks))
            self._workers = assign_workers(picked, [ids[i] for i in self.leases.pick_order],
                                           dict(zip(ids, scale.tolist())), self.node_type, self.capacity,
                                           {j: w for j, w in self._workers.items() if j in picked})
            out = {j: np.zeros(len(self.capacity), dtype=int) for j in ids}
            for j, workers in self._workers.items():
                for node, _ in workers:
                    out[j][node] += 1
            return out
        return place_on_nodes(dict(zip(ids, picks)), dict(zip(ids, scale.tolist())), self.node_type,
                              self.capacity, current, ids)
