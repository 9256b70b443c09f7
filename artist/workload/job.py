"""A job: who wants which model trained on how many GPUs for how many iterations, from when."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    job_id: str
    arrival: float  # seconds from the start of the trace
    model: str
    gpus: int
    iterations: int
    user: str = ""
    vc: str = ""
    # Hybrid-parallel jobs (LLM zoo): the plan (ParallelPlan.text(), micro-batches resolved) and the
    # global batch in sequences (0: not stated). model then names an LLM-zoo model, not a profile.
    plan: str = ""
    global_batch: int = 0

    def __post_init__(self):
        if self.gpus < 1:
            raise ValueError(f"job {self.job_id}: gpus must be >= 1")
        if self.iterations < 1:
            raise ValueError(f"job {self.job_id}: iterations must be >= 1")
        if self.global_batch < 0:
            raise ValueError(f"job {self.job_id}: global_batch must be >= 0")
        if self.arrival < 0:
            raise ValueError(f"job {self.job_id}: arrival must be >= 0")
