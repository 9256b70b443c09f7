"""The policies of the elastic loop (artist/elastic/simulation.py) by name, for sweep specs with
`loop: elastic`. Separate from artist/policies/registry.py: those are policies of the rigid event
simulator (artist/simulator.py); these allocate GPUs per node to elastic jobs every round.

    pollux          PolluxScheduler: p, delta, pop_size, generations, interference_avoidance, max_nodes
                    (the GA seed is the run's seed); jobs elastic (Pollux picks GPUs, batch and (m, s))
    optimus-oracle  OptimusOracle; tuned_jobs: true (default) = each job's batch from the workload's
                    TunedJobs columns, false = from its "realistic" file (M0 x the trace's GPU count)
    tiresias        TiresiasRigid: threshold_gpu_hours (16); tuned_jobs as above, GPU count and batch both
                    from the chosen columns

What each policy takes of a workload row is `job_config`: "none" (elastic), "batch" (the batch only, GPU
count by the policy) or "both" (rigid).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, Sequence

from artist.policies.pollux.baselines import TIRESIAS_THRESHOLD_GPU_SECONDS, OptimusOracle, TiresiasRigid
from artist.policies.pollux.scheduler import PolluxScheduler


@dataclass(frozen=True)
class ElasticPolicyEntry:
    build: Callable[..., object]   # (capacity, seed, **params) -> allocator
    job_config: str                # "none" | "batch" | "both"
    params: tuple[str, ...]        # accepted parameter names


def _pollux(capacity, seed, p=-1.0, delta=30.0, pop_size=100, generations=100, interference_avoidance=True,
            max_nodes=16):
    return PolluxScheduler(capacity, p=p, delta=delta, pop_size=pop_size, generations=generations, seed=seed,
                           interference_avoidance=interference_avoidance, max_nodes=max_nodes)


def _optimus(capacity, seed, tuned_jobs=True):
    _check_bool("tuned_jobs", tuned_jobs)
    return OptimusOracle(capacity)


def _tiresias(capacity, seed, tuned_jobs=True, threshold_gpu_hours=TIRESIAS_THRESHOLD_GPU_SECONDS / 3600):
    _check_bool("tuned_jobs", tuned_jobs)
    if isinstance(threshold_gpu_hours, bool) or not isinstance(threshold_gpu_hours, (int, float)) \
            or not threshold_gpu_hours > 0:
        raise ValueError(f"threshold_gpu_hours must be a positive number, got {threshold_gpu_hours!r}")
    return TiresiasRigid(capacity, threshold_gpu_seconds=float(threshold_gpu_hours) * 3600)


def _check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")


def _params(fn) -> tuple[str, ...]:
    return tuple(n for n in inspect.signature(fn).parameters if n not in ("capacity", "seed"))


ELASTIC_POLICIES = {
    "pollux": ElasticPolicyEntry(_pollux, "none", _params(_pollux)),
    "optimus-oracle": ElasticPolicyEntry(_optimus, "batch", _params(_optimus)),
    "tiresias": ElasticPolicyEntry(_tiresias, "both", _params(_tiresias)),
}


def elastic_policy_names() -> list[str]:
    return sorted(ELASTIC_POLICIES)


def make_elastic_policy(name: str, params: dict, capacity: Sequence[int], seed: int = 0):
    """The allocator; KeyError for an unknown name or parameter, ValueError/TypeError for a bad value."""
    if name not in ELASTIC_POLICIES:
        raise KeyError(f"unknown elastic policy {name!r}; known: {', '.join(elastic_policy_names())}")
    entry = ELASTIC_POLICIES[name]
    unknown = sorted(set(params) - set(entry.params))
    if unknown:
        raise KeyError(f"elastic policy {name!r} has no parameter {unknown[0]!r}; "
                       f"parameters: {', '.join(entry.params)}")
    return entry.build(capacity, seed, **params)


def uses_tuned_jobs(name: str, params: dict) -> bool:
    """Whether the policy reads the workload's TunedJobs columns (else its realistic ones)."""
    return bool(params.get("tuned_jobs", True))
