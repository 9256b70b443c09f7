"""The throughput matrix Gavel's policies read: T[job, type] = the job's throughput (samples per second)
on its own GPU count of that type, as profiling measured it.

Gavel assumes these are known per (job, accelerator type), from profiling or its online estimator
(paper section 3; its simulator reads a measured table). Here a ThroughputProfiler answers them; the
simulator side provides one (artist/elastic/profiling.py: the job run alone on a consolidated placement),
so the policy sees measured numbers, never the network model. An entry is 0 where the job cannot run
on the type (its batch does not fit the memory, or the type has fewer GPUs than the job needs): Gavel
never schedules a job where its throughput is 0.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np


class ThroughputProfiler(Protocol):
    def throughput(self, job_id: str, gpu_type: str, gpus: int) -> float:
        """Samples per second of the job alone on `gpus` GPUs of `gpu_type` (0: it cannot run there)."""
        ...


def throughput_matrix(jobs: Sequence[tuple[str, int]], gpu_types: Sequence[str], type_gpus: Sequence[int],
                      profiler: ThroughputProfiler) -> np.ndarray:
    """T (jobs x types) for jobs given as (job id, scale factor = GPUs); types with fewer GPUs than a job
    needs get 0 without asking the profiler."""
    if len(gpu_types) != len(type_gpus):
        raise ValueError(f"{len(gpu_types)} GPU types but {len(type_gpus)} GPU counts")
    out = np.zeros((len(jobs), len(gpu_types)))
    for i, (job_id, gpus) in enumerate(jobs):
        if gpus < 1:
            raise ValueError(f"job {job_id}: a Gavel job needs its GPU count (scale factor >= 1), got {gpus}")
        for t, (gpu_type, total) in enumerate(zip(gpu_types, type_gpus)):
            if gpus > total:
                continue
            value = float(profiler.throughput(job_id, gpu_type, gpus))
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"job {job_id} on {gpu_type}: profiled throughput must be finite and >= 0, "
                                 f"got {value}")
            out[i, t] = value
    return out


def equal_share_throughputs(throughputs: np.ndarray, type_gpus: Sequence[int]) -> np.ndarray:
    """Each job's throughput under Gavel's equal share X_equal[job, type] = N_type / N (its time split
    over the types in proportion to their GPUs; Gavel's ProportionalPolicy, read in stanford-futuredata/
    gavel scheduler/policies/proportional.py: N_t / m per job, divided by the largest row sum)."""
    n = np.asarray(type_gpus, dtype=float)
    return np.asarray(throughputs, dtype=float) @ (n / n.sum())
