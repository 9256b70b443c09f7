"""Crius' scheduler (scheduler.py CriusScheduler, unchanged) and its paper's baselines FCFS and ElasticFlow-LS
(baselines.py, unchanged) as policies of the elastic loop (artist/elastic/allocators.py, 60 s rounds), for the
loop's data-parallel jobs: they then run on every workload and cluster the elastic loop runs, not only on
Crius' own LLM jobs and clusters (artist/crius/).

    allocator = CriusElastic(cluster, context, depth=3)   # the registry's "crius" (job_config "both")
    allocator = CriusElastic(cluster, context, policy="fcfs")   # "fcfs", "elasticflow-ls", "gandiva-crius"
    allocator.allocate(views)                              # {job: GPUs per node}, every round

What it takes of a job: the workload row's TunedJobs batch as the job's fixed global batch (Crius keeps the
global batch and scales GPU count and type: its heterogeneity scaling) and the TunedJobs GPU count as the
user's request N_G (Crius' reference: a job may get N_G / 2, N_G or 2 N_G GPUs of one type, jobs.py). The
workload names no GPU type, so a job's reference allocation is its fastest one (CellThroughput's rule
when the user's type is not in the cluster). The baselines are not heterogeneity-aware and keep a job on
the user's type: here the type on which the job's N_G GPUs are fastest by the same estimate (ties to the
cluster file's first pool), as a user picks the best machines for a request.

Cells (ElasticCatalogue.crius_view): these jobs are data-parallel CNNs / recommenders / speech models that
the loop runs with DDP; there is no tensor or pipeline parallelism for them, so a Cell is (GPU type, GPU
count), one stage, the DP plan, and there is no plan tuning (Crius' tuner searches hybrids of stages).
The baselines rank allocations by the same estimate (their DP view) and run the DP plan (their full search
has nothing else to find). The agile estimate of a Cell is what Crius may observe, never the loop's StepTimer:
  iteration = (s + 1) x compute(m) + all_reduce(gradient bytes over the count's GPUs),
with (m, s) the local batch and accumulation passes the loop runs the global batch with on that count
(artist/elastic/spec.py fixed_batch_config), compute(m) the job's measured 1-GPU profile of the type
(JobView.profile, which the loop measures for a new job because `wants_profiles`; Sia's profiling)
interpolated linearly between the profiled local batches, and the all-reduce read from Crius' offline
CommTable (commtable.py) of that type's pool, on a packed group of the count, for the application's
gradient bytes (its ModelProfile, PolicyContext.profiles). As in Crius' pipeline formula (cells.py), the
gradient all-reduce is added after the compute (no overlap with the backward). Memory filter: a count whose
local batch the type cannot run (the application's per-type limits, ElasticSpec.limit: below the smallest
local batch; above the largest the loop accumulates, as Crius' micro-batches) is not a Cell.

Cadence: Crius and these baselines decide on arrivals and departures (every_round False). The loop calls
allocate() every round; the scheduler decides again only when the set of jobs changed, else every job
keeps its GPUs. Crius' Gandiva (gandiva-crius, grow-shrink) runs here too; Crius' Gavel decides every round and
does not (the suite's own Gavel does).

Placement of a decision {job: (type, count)}: a job whose (type, count) did not change keeps its GPUs; the
others are packed into their type's pool, largest first (then arrival), on the fewest machines, then the
fewest racks (pack()). A changed allocation restarts the job: the loop charges its application's restart delay
(ElasticProgress.resize).

What differs from Crius' own runs (artist/crius/): 60 s rounds instead of 5-minute ones (decisions still
only on events), DP-only Cells without plan tuning, the profiling is Sia's 1-GPU profile of every type
(charged as GPU time to the job, without delaying its start), the estimate's compute is measured rather
than derived from FLOPs, and jobs run on the loop's ground truth (measured compute + the network backend's
DDP step on the real placement).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from artist.elastic.spec import fixed_batch_config
from artist.policies.crius.commtable import CommTable
from artist.policies.crius.jobs import JobRun, JobSpec, allocations
from artist.policies.crius.registry import make_policy as make_crius_policy
from artist.policies.crius.scheduler import SEARCH_DEPTH, CriusScheduler

NO_USER_TYPE = ""  # the elastic workloads name no GPU type: the reference is the job's fastest allocation


@dataclass(frozen=True)
class DPCell:
    """A data-parallel Cell's agile estimate: one stage, d = gpus, t = 1."""
    gpu_type: str
    gpus: int
    global_batch: int
    local_batch: int
    accum_steps: int
    compute_s: float  # (s + 1) passes at the local batch, interpolated from the 1-GPU profile
    all_reduce_s: float  # the gradient all-reduce from the CommTable (0 on one GPU)

    @property
    def latency_s(self) -> float:
        return self.compute_s + self.all_reduce_s

    @property
    def samples_per_s(self) -> float:
        return self.global_batch / self.latency_s


def interpolate_profile(table: dict[int, float], local_batch: int) -> float:
    """1-GPU iteration seconds at a local batch, linear between the profiled batches (clamped at the ends)."""
    batches = sorted(table)
    return float(np.interp(local_batch, batches, [table[b] for b in batches]))


class ElasticCatalogue:
    """What CriusScheduler asks of a catalogue (crius_view), for the elastic loop's jobs; `model` is the
    application name. Profiles are observed per application (the loop's 1-GPU measurement of a job; jobs
    of one application measure the same tables), CommTables are built per pool on first use."""

    def __init__(self, cluster, apps: dict, profiles: dict, fabrics: dict):
        self.cluster, self.apps, self.model_profiles, self.fabrics = cluster, apps, profiles, fabrics
        self.topologies = {p.gpu_type: p.topology for p in cluster.pools}
        self.tables: dict[str, CommTable] = {}
        self.observed: dict[str, dict[str, dict[int, float]]] = {}
        self._memo: dict = {}

    def observe(self, app: str, profile: dict | None) -> None:
        if app in self.observed:
            return
        missing = [t for t in self.topologies if not (profile or {}).get(t)]
        if missing:
            raise ValueError(f"crius estimates Cells from the loop's 1-GPU profiles: application {app} has none "
                             f"for {', '.join(missing)} (run the loop with profiling)")
        self.observed[app] = {t: dict(profile[t]) for t in self.topologies}

    def _table(self, gpu_type: str) -> CommTable:
        table = self.tables.get(gpu_type)
        if table is None:
            fabric = self.fabrics.get(gpu_type)  # the run's network model of this pool (the loop passes it)
            if fabric is None:
                raise ValueError(f"crius profiles its CommTable on the run's network model: the policy context "
                                 f"has none for pool {gpu_type!r}")
            table = self.tables[gpu_type] = CommTable(self.topologies[gpu_type], fabric)
        return table

    def gradient_bytes(self, app: str) -> float:
        profile = self.model_profiles.get(app)
        if profile is None:
            raise ValueError(f"crius needs application {app}'s model profile (its gradient bytes) for the "
                             "CommTable's all-reduce; the policy context has none")
        return float(profile.total_bytes)

    def crius_view(self, model: str, batch: int, n_g: int, gpu_type: str, gpus: int) -> DPCell | None:
        """The DP Cell of (type, count) for the application's global batch (None: the batch cannot run there)."""
        key = (model, batch, gpu_type, gpus)
        if key not in self._memo:
            self._memo[key] = self._estimate(model, batch, gpu_type, gpus)
        return self._memo[key]

    def _estimate(self, app: str, batch: int, gpu_type: str, gpus: int) -> DPCell | None:
        if gpus < 1 or gpus > self.topologies[gpu_type].gpus:
            return None
        config = fixed_batch_config(batch, gpus, self.apps[app][1], gpu_type)
        if config is None:  # the memory filter: no local batch within the type's limits
            return None
        m, s = config
        compute = (s + 1) * interpolate_profile(self.observed[app][gpu_type], m)
        sync = self._table(gpu_type).seconds("all_reduce", gpus, self.gradient_bytes(app)) if gpus > 1 else 0.0
        return DPCell(gpu_type, gpus, batch, m, s, compute, sync)

    def dp_view(self, model: str, batch: int, gpu_type: str, gpus: int) -> float:
        """Samples/s of the DP plan (0: the batch cannot run there): the baselines' ranking."""
        cell = self.crius_view(model, batch, 0, gpu_type, gpus)
        return cell.samples_per_s if cell is not None else 0.0

    def run_plan(self, model: str, batch: int, n_g: int, gpu_type: str, gpus: int, tuned: bool) -> DPCell | None:
        """The plan the job would run (None: it cannot run there): the DP Cell, tuned or not (DP jobs have
        no other plan)."""
        return self.crius_view(model, batch, n_g, gpu_type, gpus)


def pack(need: int, nodes: Sequence[int], free: np.ndarray, rack_of: Sequence) -> dict[int, int]:
    """GPUs per node for `need` GPUs among `nodes` (one pool): one node if one holds them (the fullest that
    does); else the fewest nodes, preferring one rack when a rack holds them (largest free first, the last
    share on the fullest node that holds it). ValueError if the nodes lack the GPUs."""
    nodes = [n for n in nodes if free[n] > 0]
    if sum(int(free[n]) for n in nodes) < need:
        raise ValueError(f"{need} GPUs asked, {sum(int(free[n]) for n in nodes)} free")
    single = [n for n in nodes if free[n] >= need]
    if single:
        n = min(single, key=lambda k: (free[k], k))
        return {n: need}

    def fewest(group: list[int]) -> dict[int, int] | None:
        ordered = sorted(group, key=lambda k: (-free[k], k))
        taken, left = {}, need
        for i, n in enumerate(ordered):
            if left <= free[n]:
                rest = [k for k in ordered[i:] if free[k] >= left]
                last = min(rest, key=lambda k: (free[k], k))
                taken[last] = left
                return taken
            taken[n] = int(free[n])
            left -= int(free[n])
        return None

    options = []
    for rack in sorted(set(rack_of[n] for n in nodes)):
        found = fewest([n for n in nodes if rack_of[n] == rack])
        if found is not None:
            options.append((len(found), rack, found))
    if not options:  # no rack holds them: the fewest nodes of the pool
        return fewest(nodes)
    return min(options, key=lambda o: o[:2])[2]


class CriusElastic:
    """The elastic loop's Allocator running CriusScheduler or one of Crius' baselines (module docstring)."""
    wants_profiles = True  # the loop measures every new job's 1-GPU profile of every type (JobView.profile)

    def __init__(self, cluster, context, depth: int = SEARCH_DEPTH, policy: str = "crius"):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"depth must be a whole number >= 0 (Crius' search depth), got {depth!r}")
        if context is None:
            raise ValueError("crius needs the run's applications (the policy context)")
        self.cluster = cluster
        self.capacity = np.array(cluster.capacity, dtype=int)
        self.node_types = list(cluster.node_types)
        self.rack_of = [(n.pool, cluster.pools[n.pool].topology.rack_of_machine(n.machine)) for n in cluster.nodes]
        self.pool_gpus = {p.gpu_type: p.topology.gpus for p in cluster.pools}
        self.catalogue = ElasticCatalogue(cluster, context.apps, getattr(context, "profiles", {}) or {},
                                          getattr(context, "fabrics", {}) or {})
        self.scheduler = (CriusScheduler(self.catalogue, self.pool_gpus, depth) if policy == "crius"
                          else make_crius_policy(policy, self.catalogue, self.pool_gpus))
        self.job_specs = {j.job_id: j for j in context.jobs}  # job -> ElasticJobSpec (its application)
        self.runs: dict[str, JobRun] = {}            # job -> Crius' record (its spec, allocation, opportunistic)
        self.held: dict[str, np.ndarray] = {}        # job -> GPUs per node
        self.decisions = 0

    def _spec(self, view) -> JobSpec:
        if view.gpus_wanted < 1 or view.batch_wanted < 1:
            raise ValueError(f"job {view.job_id}: crius needs the job's GPU request and global batch "
                             "(job_config 'both': the workload's TunedJobs columns)")
        app = self._app_of(view)
        self.catalogue.observe(app, view.profile)
        spec = JobSpec(view.job_id, view.submitted, app, int(view.batch_wanted), int(view.gpus_wanted),
                       NO_USER_TYPE, 0)
        if not isinstance(self.scheduler, CriusScheduler):  # a baseline: the user's type is the fastest at N_G
            speeds = [(self.catalogue.dp_view(app, spec.global_batch, t, spec.n_g), -k)
                      for k, t in enumerate(self.pool_gpus) if spec.n_g <= self.pool_gpus[t]]
            best = max(speeds, default=(0.0, 0))
            if best[0] <= 0:
                raise ValueError(f"job {view.job_id}: {self.scheduler.name} runs a job on N_G GPUs of one type, and "
                                 f"no type holds {spec.n_g} GPUs at a local batch within its limits ({app}, batch "
                                 f"{spec.global_batch})")
            spec = dataclasses.replace(spec, gpu_type=list(self.pool_gpus)[-best[1]])
        if not any(self.catalogue.crius_view(app, spec.global_batch, spec.n_g, t, g)
                   for t, g in allocations(spec, self.pool_gpus)):
            raise ValueError(f"job {view.job_id}: no Cell of it fits this cluster ({app}, batch {spec.global_batch},"
                             f" {spec.n_g} GPUs requested: no type holds N_G / 2, N_G or 2 N_G GPUs at a local "
                             "batch within its limits)")
        return spec

    def _app_of(self, view) -> str:
        spec = self.job_specs.get(view.job_id)
        if spec is None:
            raise ValueError(f"job {view.job_id}: not among the run's jobs (the policy context lists them)")
        return spec.app

    def allocate(self, jobs) -> dict[str, np.ndarray]:
        ids = {j.job_id for j in jobs}
        if ids != set(self.runs):
            for gone in [k for k in self.runs if k not in ids]:
                del self.runs[gone]
                self.held.pop(gone, None)
            for view in sorted(jobs, key=lambda j: (j.submitted, j.job_id)):
                if view.job_id not in self.runs:
                    self.runs[view.job_id] = JobRun(self._spec(view))
            self._decide()
        zero = np.zeros(len(self.capacity), dtype=int)
        return {j.job_id: self.held.get(j.job_id, zero).copy() for j in jobs}

    def _decide(self) -> None:
        runs = sorted(self.runs.values(), key=lambda r: (r.spec.arrival, r.spec.job_id))
        targets = self.scheduler.decide(runs)
        self.decisions += 1
        free = self.capacity.copy()
        kept, moved = {}, []
        for run in runs:
            target = targets.get(run.spec.job_id)
            if target is not None and target == run.alloc and run.spec.job_id in self.held:
                kept[run.spec.job_id] = self.held[run.spec.job_id]
                free -= self.held[run.spec.job_id]
            elif target is not None:
                moved.append((run, target))
            run.alloc = target
        self.held = kept
        order = {r.spec.job_id: k for k, r in enumerate(runs)}
        for run, (gpu_type, count) in sorted(moved, key=lambda m: (-m[1][1], order[m[0].spec.job_id])):
            nodes = [n for n, t in enumerate(self.node_types) if t == gpu_type]
            per_node = np.zeros(len(self.capacity), dtype=int)
            for n, g in pack(count, nodes, free, self.rack_of).items():
                per_node[n] = g
            free -= per_node
            self.held[run.spec.job_id] = per_node
