"""What an elastic run gives back: its jobs (artist/elastic/jobs.py ElasticJob, with their per-round records),
the makespan, the rounds and the allocator's time per round (artist/elastic/metrics.py makes the tables)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from artist.elastic.fairness_hetero import fairness_fields
from artist.elastic.jobs import ElasticJob


@dataclass
class ElasticResult:
    jobs: list[ElasticJob]
    makespan: float
    rounds: int
    policy_seconds: list[float]   # wall seconds of every scheduler call
    isolated: object = None       # IsolatedTimes of a multi-type run: adds Sia's FTF to the summary
    policy_cpu_seconds: list[float] = field(default_factory=list)  # this process's CPU seconds of every call
    contention: str = "isolated"  # "shared": jobs tables and summaries carry the contention slowdown
    components: tuple[int, int] = (0, 0)  # shared: components of 2+ met over the rounds, and co-simulated (memo)
    contention_answers: object = None  # shared: AnswerCounts of the co-simulated components (network/provenance.py)

    def summary(self) -> dict:
        jct = np.array([j.finish - j.spec.arrival for j in self.jobs])
        return {"jobs": len(self.jobs), "avg_jct_h": float(jct.mean() / 3600),
                "p99_jct_h": float(np.percentile(jct, 99) / 3600), "makespan_h": self.makespan / 3600,
                "avg_restarts": float(np.mean([j.progress.restarts for j in self.jobs])),
                "policy_s_median": float(np.median(self.policy_seconds)) if self.policy_seconds else 0.0,
                "policy_s_p95": float(np.percentile(self.policy_seconds, 95)) if self.policy_seconds else 0.0,
                "gpu_h_per_job": float(np.mean([j.attained + j.profile_gpu_seconds for j in self.jobs]) / 3600),
                **fairness_fields(self)}
