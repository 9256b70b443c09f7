"""A Crius job as the simulation and the schedulers see it, and the allocations it may get.

A job keeps its global batch (Crius never changes hyper-parameters), so it finishes after a fixed number
of iterations; its progress rate is 1 / (the true step time of the plan it runs).

Allocations: (GPU type, GPU count) with the count in {N_G / 2, N_G, 2 N_G} (InitCells, Crius Alg. 1),
at least 1 and at most the pool. A job never spans GPU types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Alloc = tuple[str, int]  # (GPU type, GPU count)


@dataclass(frozen=True)
class JobSpec:
    job_id: str
    arrival: float
    model: str  # an LLM-zoo name (bert-*, moe-*)
    global_batch: int
    n_g: int  # the user's GPU count
    gpu_type: str  # the user's GPU type
    iterations: int


@dataclass
class JobRun:
    spec: JobSpec
    alloc: Alloc | None = None
    gpus: tuple[int, ...] = ()
    done: float = 0.0  # iterations done
    restart_left: float = 0.0  # seconds of restart (tuning + checkpoint-resume) still to wait
    restarts: int = 0
    start: float | None = None
    finish: float | None = None
    opportunistic: bool = False
    tuned: set = field(default_factory=set)  # allocations whose plan is already searched (no tuning again)
    step_s: float = 0.0  # true step time on the current placement


def gpu_counts(n_g: int) -> list[int]:
    return sorted({max(1, n_g // 2), n_g, 2 * n_g})


def allocations(spec: JobSpec, capacity: dict[str, int], types=None) -> list[Alloc]:
    return [(t, g) for t in sorted(types or capacity) for g in gpu_counts(spec.n_g) if g <= capacity[t]]
