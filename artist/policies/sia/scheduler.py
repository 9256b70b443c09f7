"""SiaScheduler: the elastic loop's Allocator for Sia (digest 2.3), one call per 60 s round.

1. Jobs mid checkpoint-restart keep their GPUs (pinned, [A]); their GPUs leave the ILP's capacity.
2. Every other job's options (matrix.py): configurations of every type within its cap, valued by its
   per-type goodput estimate (estimator.py), row-normalised, restart-factored and raised to p.
3. The ILP (ilp.py) picks at most one option per job within every type's free GPUs, exactly (HiGHS).
4. The placer (placer.py) maps the chosen configurations to GPUs per node.
It reads only the JobViews (agents fitted to what the jobs measured, their 1-GPU profiles, bookkeeping);
A pipeline job (a view with `pipeline`, pipeline.py) needs no agents: its per-type GPipe model values it.
`wants_profiles` asks the elastic loop to profile every new job on one GPU of each type.
Per round it records the wall seconds of its phases (last_timing) for the policy-time metric.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from artist.policies.sia.configs import Configuration, configurations, type_shapes
from artist.policies.sia.ilp import LAMBDA, P, solve
from artist.policies.sia.matrix import job_options
from artist.policies.sia.placer import Placer, Request


class SiaScheduler:
    wants_profiles = True

    def __init__(self, capacity: Sequence[int], node_types: Sequence[str], p: float = P, lam: float = LAMBDA):
        if len(capacity) == 0 or min(capacity) < 1:
            raise ValueError("capacity: every node needs at least one GPU")
        if p == 0 or (p < 0 and lam <= 1):
            raise ValueError(f"Sia needs p != 0 and, for p < 0, lambda > 1 (got p {p}, lambda {lam})")
        self.capacity = np.asarray(capacity, dtype=int)
        self.node_types = [str(t) for t in node_types]
        self.shapes = type_shapes(self.capacity, self.node_types)
        self.configs = configurations(self.shapes)
        self.placer = Placer(self.capacity, self.node_types)
        self.p, self.lam = float(p), float(lam)
        self.last_timing: dict[str, float] = {}
        self.last_evicted: list[str] = []

    def allocate(self, jobs) -> dict[str, np.ndarray]:
        t0 = time.perf_counter()
        for j in jobs:
            if not j.agents and getattr(j, "pipeline", None) is None:
                raise ValueError(f"job {j.job_id}: Sia needs the job's per-type agents (JobView.agents)")
        free = {t: s.gpus for t, s in self.shapes.items()}
        pinned = [j for j in jobs if j.restarting and np.asarray(j.current).sum() > 0]
        for j in pinned:
            free[j.gpu_type] -= int(np.asarray(j.current).sum())
        free_jobs = [j for j in jobs if not (j.restarting and np.asarray(j.current).sum() > 0)]
        options = []
        for i, j in enumerate(free_jobs):
            options.extend(job_options(i, j, self.shapes, self.configs, self.p))
        t1 = time.perf_counter()
        chosen = solve(options, len(free_jobs), free, self.p, self.lam)
        t2 = time.perf_counter()
        decided = {free_jobs[options[k].job].job_id: options[k].config for k in chosen}
        requests = [Request(j.job_id, _current_config(j), np.asarray(j.current), j.gpu_type, pinned=True)
                    for j in pinned]
        requests += [Request(j.job_id, decided[j.job_id], np.asarray(j.current), j.gpu_type)
                     for j in free_jobs if j.job_id in decided]
        placed, self.last_evicted = self.placer.place(requests)
        out = {j.job_id: placed.get(j.job_id, np.zeros(len(self.capacity), dtype=int)) for j in jobs}
        t3 = time.perf_counter()
        self.last_timing = {"options": t1 - t0, "ilp": t2 - t1, "place": t3 - t2, "total": t3 - t0,
                            "variables": len(options)}
        return out


def _current_config(view) -> Configuration:
    row = np.asarray(view.current)
    return Configuration(view.gpu_type, int(np.count_nonzero(row)), int(row.sum()))
