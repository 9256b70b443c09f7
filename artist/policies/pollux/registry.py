"""The elastic allocators by name: the one registry of `loop: elastic` sweeps, benchmarks/pollux_run.py and
artist/elastic/hetero_runs.py (Sia's multi-type cluster). Separate from artist/policies/registry.py: those
place rigid jobs in the event loop (artist/simulator.py); these allocate GPUs per node to elastic jobs every
round (the event loop runs them through artist/elastic/allocators.py).

Every policy is built on an ElasticCluster (artist/elastic/cluster.py): a one-type topology is a cluster of
one pool, a cluster file (topologies/clusters/) one pool per GPU type.

    sia             SiaScheduler: p, lam; heterogeneity-aware; jobs elastic (profiles each new job)
    pollux          PolluxScheduler: p, delta, pop_size, generations, interference_avoidance, max_nodes
                    (the GA seed is the run's seed); jobs elastic (Pollux picks GPUs, batch and (m, s)); on a
                    cluster of several types it sees 4-GPU virtual nodes, as Sia's artifact runs it (a
                    mixed-type allocation runs on its dominant type, artist/elastic/jobs.py)
    gavel           GavelPolicy (artist/policies/gavel/) with its IsolatedProfiler: objective; only
                    tuned_jobs: true (the workload's GPU count and batch); its own 360 s round leases;
                    normalise (true: throughputs normalised per job, Gavel's; false: the raw sum),
                    throughput (samples or iterations per second), leases (gavel, or sia-artifact: the
                    lease accounting and worker assignment of the Sia artifact's Gavel, rounds.py), solver
                    (simplex, or interior: a point inside the optimal face, lp.py) - the Sia artifact ran
                    normalise: false, throughput: iterations, leases: sia-artifact, solver: interior
    optimus-oracle  OptimusOracle; tuned_jobs: true (default) = each job's batch from the workload's
                    TunedJobs columns, false = from its "realistic" file (M0 x the trace's GPU count)
    tiresias-pollux TiresiasRigid, Tiresias as the Pollux artifact runs it (two queues on GPU-hours, arrival
                    order in each, no placement rule): threshold_gpu_hours (16); tuned_jobs as above, GPU
                    count and batch both from the chosen columns
    fifo, gandiva, tiresias, dally, dally-manual, dally-nowait, dally-fullyconsolidated
                    the rigid event simulator's policies (artist/policies/), their own schedule() run every
                    round through RigidPolicyOnElasticJobs (artist/policies/rigid_in_elastic.py), rigid jobs
                    (tuned_jobs as tiresias-pollux); their parameters as in the rigid loop (gandiva: migrate;
                    tiresias: thresholds, starvation_knob, skew_threshold (its skew from the application's
                    model profile); dally:
                    history_s; dally-manual: machine_timer_s, rack_timer_s). They see the cluster's pools as
                    one fabric of racks (every pool of one machine shape) and decide only at round
                    boundaries: a finished job's GPUs are free from the next round, a Dally timer is acted on
                    at the first round at or after its expiry (its wake-up request is not needed), and a
                    preemption or migration costs the application's restart delay, not restore_seconds.
                    Gandiva: as in the rigid loop (first-fit starts, locality migrations when the saving beats
                    the restore; no time slicing or GPU packing in either loop); its restore figure is the
                    workload's largest restart delay. Heterogeneity-unaware: a placement spanning pools
                    runs on its dominant type
    crius           CriusElastic (artist/policies/crius/elastic.py): depth (Crius' search depth, 3); rigid rows
                    read as Crius reads a job: the TunedJobs batch is its fixed global batch, the GPU count
                    its request N_G, and Crius picks the type and N_G / 2, N_G or 2 N_G GPUs; decides on
                    arrivals and departures only; estimates from the jobs' 1-GPU profiles (wants_profiles)
                    and its own CommTable on the context's fabrics and model profiles, never the step timer
    fcfs, elasticflow-ls, gandiva-crius
                    Crius' baselines (artist/policies/crius/baselines.py) through CriusElastic: no parameters;
                    jobs read as crius reads them, on the type where their N_G GPUs are fastest (Crius'
                    baselines keep the user's type; the workload names none)

What each policy takes of a workload row is `job_config`: "none" (elastic), "batch" (the batch only, GPU
count by the policy) or "both" (rigid). Optimus+Oracle and Tiresias are heterogeneity-unaware: on a cluster
of several types they see every node and a mixed allocation runs on its dominant type (as Pollux's).

A builder takes (cluster, seed, context, **params) and returns (allocator, the cluster as the policy sees
it). The context (PolicyContext) gives the applications, the jobs and a step timer for a cluster (only
Gavel's profiler and the rigid policies' estimate() read the timer), and what Crius profiles offline: the
applications' model profiles and each pool's network model.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from artist.policies.pollux.baselines import TIRESIAS_THRESHOLD_GPU_SECONDS, OptimusOracle, TiresiasRigid
from artist.policies.pollux.scheduler import PolluxScheduler

SIA_POLLUX_NODE_GPUS = 4  # Sia's artifact presents 8-GPU machines to Pollux as two 4-GPU nodes (digest 2.3)


@dataclass
class PolicyContext:
    """What a builder may read besides the cluster: the applications (name -> (MeasuredApplication,
    ElasticSpec)), the jobs, and timer_for(cluster) -> the StepTimer of the run on that cluster."""
    apps: dict
    jobs: list = field(default_factory=list)
    timer_for: Callable | None = None
    profiles: dict = field(default_factory=dict)  # application -> ModelProfile (its gradient bytes)
    fabrics: dict = field(default_factory=dict)   # GPU type -> the run's FabricModel of that pool
    # application -> the factor the run's rules divide its progress by (elastic.rules goodput_slowdown): what
    # a measurement of the job observes
    slowdowns: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ElasticPolicyEntry:
    build: Callable[..., tuple]    # (cluster, seed, context, **params) -> (allocator, cluster as seen)
    job_config: str                # "none" | "batch" | "both"
    params: tuple[str, ...]        # accepted parameter names
    summary: str = ""              # one line for `artist list policies`: what it is and what it needs


def _sia(cluster, seed, ctx, p=-0.5, lam=1.1):
    from artist.policies.sia.scheduler import SiaScheduler

    return SiaScheduler(cluster.capacity, cluster.node_types, p=p, lam=lam), cluster


def _pollux(cluster, seed, ctx, p=-1.0, delta=30.0, pop_size=100, generations=100, interference_avoidance=True,
            max_nodes=16):
    seen = cluster.virtual(SIA_POLLUX_NODE_GPUS) if len(cluster.pools) > 1 else cluster
    return PolluxScheduler(seen.capacity, p=p, delta=delta, pop_size=pop_size, generations=generations, seed=seed,
                           interference_avoidance=interference_avoidance, max_nodes=max_nodes), seen


def _gavel(cluster, seed, ctx, objective="max_sum_throughput", tuned_jobs=True, normalise=True,
           throughput="samples", leases="gavel", solver="simplex"):
    from artist.elastic.profiling import IsolatedProfiler
    from artist.policies.gavel.policy import GavelPolicy

    if tuned_jobs is not True:
        raise ValueError("only tuned_jobs: true (the workload's GPU count and batch) is wired for gavel")
    _check_bool("normalise", normalise)
    if ctx is None or ctx.timer_for is None:
        raise ValueError("gavel profiles jobs: it needs the run's applications, jobs and step timer")
    profiler = IsolatedProfiler(ctx.timer_for(cluster), ctx.apps, ctx.jobs,
                                {p.gpu_type: p.topology.gpus_per_machine for p in cluster.pools}, unit=throughput,
                                slowdowns=ctx.slowdowns)
    return GavelPolicy(cluster.capacity, cluster.node_types, profiler, objective=objective, normalise=normalise,
                       leases=leases, solver=solver), cluster


def _optimus(cluster, seed, ctx, tuned_jobs=True):
    _check_bool("tuned_jobs", tuned_jobs)
    return OptimusOracle(cluster.capacity), cluster


def _tiresias(cluster, seed, ctx, tuned_jobs=True, threshold_gpu_hours=TIRESIAS_THRESHOLD_GPU_SECONDS / 3600):
    _check_bool("tuned_jobs", tuned_jobs)
    if isinstance(threshold_gpu_hours, bool) or not isinstance(threshold_gpu_hours, (int, float)) \
            or not threshold_gpu_hours > 0:
        raise ValueError(f"threshold_gpu_hours must be a positive number, got {threshold_gpu_hours!r}")
    return TiresiasRigid(cluster.capacity, threshold_gpu_seconds=float(threshold_gpu_hours) * 3600), cluster


def _rigid(policy: str):
    """The builder of a rigid-simulator policy in the elastic loop (artist/policies/rigid_in_elastic.py)."""
    def build(cluster, seed, ctx, tuned_jobs=True, **params):
        from artist.policies.registry import make_policy
        from artist.policies.rigid_in_elastic import RigidPolicyOnElasticJobs

        _check_bool("tuned_jobs", tuned_jobs)
        return RigidPolicyOnElasticJobs(make_policy(policy, **params), cluster, ctx), cluster
    return build


def _rigid_params(policy: str) -> tuple[str, ...]:
    """tuned_jobs and the rigid policy's own parameters (its class's __init__, as make_policy checks them)."""
    from artist.policies import registry as rigid

    rigid._load_all()
    init = inspect.signature(rigid._REGISTRY[policy].__init__).parameters
    return ("tuned_jobs",) + tuple(n for n in init if n not in ("self", "args", "kwargs"))


def _crius(cluster, seed, ctx, depth=3):  # 3: Crius' default search depth (sec. 8.1, Fig. 21)
    from artist.policies.crius.elastic import CriusElastic

    return CriusElastic(cluster, ctx, depth=depth), cluster


def _crius_baseline(policy: str):
    """The builder of one of Crius' baselines (FCFS, ElasticFlow-LS) over the loop's jobs (crius/elastic.py)."""
    def build(cluster, seed, ctx):
        from artist.policies.crius.elastic import CriusElastic

        return CriusElastic(cluster, ctx, policy=policy), cluster
    return build


RIGID_IN_ELASTIC = ("fifo", "gandiva", "tiresias", "dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated")


def _check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")


def _params(fn) -> tuple[str, ...]:
    return tuple(n for n in inspect.signature(fn).parameters if n not in ("cluster", "seed", "ctx"))


ELASTIC_POLICIES = {
    "sia": ElasticPolicyEntry(_sia, "none", _params(_sia),
                              "Sia (SOSP'23): GPU type, count and batch per job by an ILP over goodput estimates; "
                              "elastic jobs with 1-GPU profiles per type"),
    "pollux": ElasticPolicyEntry(_pollux, "none", _params(_pollux),
                                 "Pollux (OSDI'21): GPUs, batch and accumulation per job by a genetic search over "
                                 "fitted goodput models; elastic jobs"),
    "gavel": ElasticPolicyEntry(_gavel, "both", _params(_gavel),
                                "Gavel (OSDI'20): heterogeneity-aware max-min LP over throughputs, 360 s leases; "
                                "rigid jobs (tuned_jobs: true)"),
    "optimus-oracle": ElasticPolicyEntry(_optimus, "batch", _params(_optimus),
                                         "Optimus with exact remaining work (Pollux's baseline): GPU counts by "
                                         "marginal gain; jobs of a fixed batch"),
    "tiresias-pollux": ElasticPolicyEntry(_tiresias, "both", _params(_tiresias),
                                          "Tiresias as the Pollux artifact runs it (TiresiasRigid, Pollux's baseline): "
                                          "two queues on GPU-hours, arrival order in each; rigid jobs"),
    "crius": ElasticPolicyEntry(_crius, "both", _params(_crius),
                                "Crius (Cells) over data-parallel apps: type and N_G/2, N_G or 2 N_G GPUs per job; "
                                "needs 1-GPU profiles"),
    "fcfs": ElasticPolicyEntry(_crius_baseline("fcfs"), "both", (),
                               "first come first served (Crius' baseline): the workload's GPU count on the type where "
                               "it is fastest, strictly in arrival order; needs 1-GPU profiles"),
    "elasticflow-ls": ElasticPolicyEntry(_crius_baseline("elasticflow-ls"), "both", (),
                                         "ElasticFlow with loose SLOs (Crius' baseline): minimum-share admission, "
                                         "then scale-out to 2 N_G; needs 1-GPU profiles"),
    "gandiva-crius": ElasticPolicyEntry(_crius_baseline("gandiva-crius"), "both", (),
                                        "Gandiva as Crius evaluates it: grow-shrink (N_G to 2 N_G where the DP "
                                        "estimate gains) on the user's type; needs 1-GPU profiles"),
    **{name: ElasticPolicyEntry(_rigid(name), "both", _rigid_params(name),
                                "the exact loop's policy asked every round (rigid_in_elastic.py); rigid jobs")
       for name in RIGID_IN_ELASTIC},
}


def elastic_policy_names() -> list[str]:
    return sorted(ELASTIC_POLICIES)


def _plugin_policy(name: str) -> bool:
    """A policy a user's plugin file registered (artist/policies/plugins.py): it answers a SchedulerView,
    so it runs every round through RigidPolicyOnElasticJobs as the suite's rigid policies do."""
    from artist.policies import registry as rigid

    cls = rigid._REGISTRY.get(name)
    return cls is not None and rigid._from_plugin(cls)


def elastic_entry(name: str, plugins: bool = True) -> ElasticPolicyEntry:
    """The policy's entry: the suite's elastic-loop policies, or (plugins) a loaded plugin's rigid
    policy; KeyError naming the known ones."""
    entry = ELASTIC_POLICIES.get(name)
    if entry is None and plugins and _plugin_policy(name):
        entry = ElasticPolicyEntry(_rigid(name), "both", _rigid_params(name))
    if entry is None:
        raise KeyError(f"unknown elastic policy {name!r}; known: {', '.join(elastic_policy_names())} "
                       f"(or a policy of a plugin file: `plugin:`)")
    return entry


def check_elastic_params(name: str, params: dict) -> None:
    """KeyError for an unknown name or parameter (the message names the known ones)."""
    entry = elastic_entry(name)
    unknown = sorted(set(params) - set(entry.params))
    if unknown:
        raise KeyError(f"elastic policy {name!r} has no parameter {unknown[0]!r}; "
                       f"parameters: {', '.join(entry.params)}")


def make_elastic_policy(name: str, params: dict, cluster, seed: int = 0, context: PolicyContext | None = None):
    """(allocator, the cluster as the policy sees it); KeyError for an unknown name or parameter,
    ValueError/TypeError for a bad value."""
    check_elastic_params(name, params)
    return elastic_entry(name).build(cluster, seed, context, **params)


def uses_tuned_jobs(name: str, params: dict) -> bool:
    """Whether the policy reads the workload's TunedJobs columns (else its realistic ones)."""
    return bool(params.get("tuned_jobs", True))
