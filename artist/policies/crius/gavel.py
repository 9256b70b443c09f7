"""Gavel as a Crius baseline, through the Gavel module (artist/policies/gavel/: its LP and round leases).

Gavel (Narayanan et al., OSDI'20) is heterogeneity-aware but never changes a job's GPU count: every
round it solves max-sum-throughput over a jobs x types throughput matrix (rows normalised per job, so
different models weigh alike) and realises the time fractions X with round leases (which jobs run on
which type this round). As Crius runs its baselines, the matrix is the DP-profiled throughput at the
user's N_G (catalogue.dp_view), 0 where no plan fits; the job then runs its full-search plan. Rounds are
Crius' 5 minutes here (Gavel's own are 6 minutes), so decide() is called every round.
"""

from __future__ import annotations

import numpy as np

from artist.policies.crius.baselines import _Baseline
from artist.policies.crius.jobs import Alloc, JobRun


class Gavel(_Baseline):
    name = "gavel"
    every_round = True

    def __init__(self, catalogue, capacity: dict[str, int]):
        super().__init__(catalogue, capacity)
        from artist.policies.gavel.lp import max_sum_throughput
        from artist.policies.gavel.rounds import RoundLeases

        self._solve = max_sum_throughput
        self.leases = RoundLeases()

    def decide(self, jobs: list[JobRun], now: float = 0.0) -> dict[str, Alloc]:
        types = sorted(self.capacity)
        ordered = self.in_order(jobs)
        if not ordered:
            return {}
        ids = [j.spec.job_id for j in ordered]
        matrix = np.array([[self.dp(j.spec, (t, j.spec.n_g)) if self.runnable(j.spec, (t, j.spec.n_g)) else 0.0
                            for t in types] for j in ordered])
        scale = [j.spec.n_g for j in ordered]
        gpus = [self.capacity[t] for t in types]
        allocation = self._solve(matrix, scale, gpus)
        picks = self.leases.pick(ids, allocation, scale, matrix > 0, gpus, now)
        return {i: (types[p], j.spec.n_g) for i, j, p in zip(ids, ordered, picks) if p >= 0}
