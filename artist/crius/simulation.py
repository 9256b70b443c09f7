"""A heterogeneous cluster of Crius jobs under Crius or a baseline, in 5-minute scheduling rounds.

    result = simulate(pools, jobs, "crius", depth=3)          # or "fcfs", "gandiva", "elasticflow-ls"
    result.summary()

Cadence (Crius sec. 7 / Fig. 16: 5-minute rounds, decisions on arrival and departure): at every round
boundary, if a job became schedulable or finished during the round, the policy decides once for all of
them (events batched per round, digest 3.3 [I]); within a round every job progresses exactly at its
true rate, finishing mid-round if it does, and its GPUs are free for the next decision.

Costs a job pays (the paper gives no figures for them: our choices, stated):
- profiling before its first decision: Crius' InitCells profile 2 plans per Cell of PROFILE_SECONDS each,
  one GPU per type in parallel, so the job waits (Cells per type) x 2 x 30 s; the baselines' DP profile of
  their counts, 30 s each (the authors' simulator uses 60 s per Cell and 30 s per DP configuration);
- a (re)start on a new allocation: CHECKPOINT_SECONDS (checkpoint-resume) unless it is the first start,
  plus, the first time the job runs on that (type, count), the plan search: Crius' half-space tuning
  (tuning.py), the baselines' full search; both at 30 s per trial.
The step time is the ground truth (truth.py) of the plan run, on the GPUs the job holds.

Reported cluster throughput uses one yardstick for every policy: each job's true samples/s divided by its
true samples/s on its own request (type, N_G) with the full-search plan on a packed placement.
"""

from __future__ import annotations

import math
import statistics
import time as wallclock
from dataclasses import dataclass, field

from artist.crius.truth import GroundTruth
from artist.network.stack import CommSpec, fabric_for
from artist.policies.crius.catalogue import Catalogue, RunPlan
from artist.policies.crius.cells import PROFILE_SECONDS
from artist.policies.crius.cluster import PoolAllocator
from artist.policies.crius.jobs import JobRun, JobSpec, gpu_counts
from artist.policies.crius.registry import POLICIES, make_policy  # noqa: F401 - POLICIES: the loop's names
from artist.policies.crius.scheduler import SEARCH_DEPTH

ROUND_SECONDS = 300.0  # Crius' scheduling interval (sec. 7; the authors' SCHEDULING_INTERVAL = 300)
CHECKPOINT_SECONDS = 30.0  # checkpoint-resume on a restart: chosen (paper silent; Pollux uses 30 s)
MAX_ROUNDS = 200_000  # a run that has not finished by then is refused, not looped forever
@dataclass
class Result:
    policy: str
    jobs: list[JobRun]
    makespan: float
    throughput: list[tuple[float, float]]  # per round: (time, sum of normalised true throughput)
    decision_seconds: list[tuple[float, int]]  # per decision: (wall seconds, jobs it placed or moved)
    # per Crius start: (Cell estimate, truth of the Cell's plan on the GPUs given, packed?) where packed =
    # on the fewest machines the count allows (the estimator's CommTable assumes packed groups)
    accuracy: list[tuple[float, float, bool]] = field(default_factory=list)
    # Crius only, per start: (true step of its tuned plan, true step of the full-search plan), same GPUs
    tuning: list[tuple[float, float]] = field(default_factory=list)
    profile_gpu_seconds: float = 0.0
    tuning_seconds: float = 0.0

    def summary(self) -> dict:
        done = [j for j in self.jobs if j.finish is not None]
        jct = [(j.finish - j.spec.arrival) / 3600 for j in done]
        queue = [(j.start - j.spec.arrival) / 3600 for j in self.jobs if j.start is not None]
        thr = [v for _, v in self.throughput]
        acc = [1 - abs(e - t) / t for e, t, _ in self.accuracy]
        acc_packed = [1 - abs(e - t) / t for e, t, packed in self.accuracy if packed]
        tune = [1 - (c - o) / o for c, o in self.tuning]
        placed = sum(n for _, n in self.decision_seconds)
        return {
            "policy": self.policy, "jobs": len(self.jobs), "finished": len(done),
            "avg_jct_h": statistics.fmean(jct) if jct else math.nan,
            "median_jct_h": statistics.median(jct) if jct else math.nan, "max_jct_h": max(jct, default=math.nan),
            "avg_queue_h": statistics.fmean(queue) if queue else math.nan,
            "avg_throughput": statistics.fmean(thr) if thr else 0.0, "peak_throughput": max(thr, default=0.0),
            "restarts_per_job": statistics.fmean(j.restarts for j in self.jobs) if self.jobs else 0.0,
            "makespan_h": self.makespan / 3600,
            "estimation_accuracy_avg": statistics.fmean(acc) if acc else math.nan,
            "estimation_accuracy_min": min(acc, default=math.nan),
            "estimation_accuracy_packed_avg": statistics.fmean(acc_packed) if acc_packed else math.nan,
            "estimation_accuracy_packed_min": min(acc_packed, default=math.nan),
            "packed_starts": len(acc_packed) / len(acc) if acc else math.nan,
            "tuning_accuracy_avg": statistics.fmean(tune) if tune else math.nan,
            "decision_s_per_job": sum(s for s, _ in self.decision_seconds) / max(placed, 1),
            "profile_gpu_h": self.profile_gpu_seconds / 3600, "tuning_h": self.tuning_seconds / 3600,
        }


def crius_fabrics(pools, comm: CommSpec = CommSpec()) -> dict:
    """Each pool's network model, as every ArtISt command builds it (default: analytical, ring,
    uncalibrated): what the policies' CommTables are profiled on and the ground truth is timed on."""
    return {t: fabric_for(comm, p.topology) for t, p in pools.items()}


def profile_seconds(catalogue: Catalogue, spec: JobSpec, tuned: bool) -> float:
    """How long the job waits for its profiles before the first decision (module docstring)."""
    if not tuned:
        return len(gpu_counts(spec.n_g)) * PROFILE_SECONDS
    cells = sum(catalogue.cell_count(spec.model, spec.n_g, g) for g in gpu_counts(spec.n_g))
    return cells * 2 * PROFILE_SECONDS


class CriusSimulation:
    def __init__(self, pools, jobs, policy: str, depth: int = SEARCH_DEPTH, catalogue: Catalogue | None = None,
                 round_seconds: float = ROUND_SECONDS, truth: GroundTruth | None = None):
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique")
        self.pools = pools
        self.catalogue = catalogue or Catalogue(pools, crius_fabrics(pools))
        self.truth = truth or GroundTruth(self.catalogue.fabrics)  # the loop's, never the policy's
        self.capacity = {t: p.gpus for t, p in pools.items()}
        self.policy = make_policy(policy, self.catalogue, self.capacity, depth)
        self.tuned = self.policy.tuned
        self.round = float(round_seconds)
        self.jobs = [JobRun(s) for s in sorted(jobs, key=lambda j: (j.arrival, j.job_id))]
        for j in self.jobs:
            if j.spec.gpu_type not in self.capacity:
                raise ValueError(f"job {j.spec.job_id}: GPU type {j.spec.gpu_type!r} is not in the cluster "
                                 f"({', '.join(self.capacity)})")
        self.allocators = {t: PoolAllocator(p.topology) for t, p in pools.items()}
        self._ref: dict = {}

    def reference_rate(self, spec: JobSpec) -> float:
        """True samples/s on the job's own request with the full-search plan, packed (the yardstick)."""
        found = self._ref.get(spec.job_id)
        if found is None:
            run = self.catalogue.run_plan(spec.model, spec.global_batch, spec.n_g, spec.gpu_type, spec.n_g, False)
            if run is None:
                raise ValueError(f"job {spec.job_id}: {spec.model} cannot run on its request {spec.n_g} x "
                                 f"{spec.gpu_type} (no plan fits)")
            gpus = PoolAllocator(self.pools[spec.gpu_type].topology).take(spec.n_g)
            found = self._ref[spec.job_id] = spec.global_batch / self.truth.seconds(run, gpus)
        return found

    def _run_plan(self, job: JobRun) -> RunPlan:
        t, g = job.alloc
        run = self.catalogue.run_plan(job.spec.model, job.spec.global_batch, job.spec.n_g, t, g, self.tuned)
        if run is None:
            raise RuntimeError(f"policy {self.policy.name} gave job {job.spec.job_id} {g} x {t}, where no plan fits")
        return run

    def _apply(self, targets: dict, ready: list[JobRun], result: Result) -> int:
        changed = 0
        for j in ready:
            target = targets.get(j.spec.job_id)
            if j.alloc is not None and target != j.alloc:
                self.allocators[j.alloc[0]].give(j.gpus)
                j.alloc, j.gpus = None, ()
        for j in ready:
            target = targets.get(j.spec.job_id)
            if target is None or j.alloc == target:
                continue
            changed += 1
            gpus = self.allocators[target[0]].take(target[1])
            if gpus is None:
                raise RuntimeError(f"policy {self.policy.name} over-allocated {target[0]}")
            j.alloc, j.gpus = target, gpus
            run = self._run_plan(j)
            wait = 0.0
            if j.start is not None:
                j.restarts += 1
                wait += CHECKPOINT_SECONDS
            if target not in j.tuned:
                j.tuned.add(target)
                wait += run.tuning_s
                result.tuning_seconds += run.tuning_s
            j.restart_left = wait
            j.step_s = self.truth.seconds(run, gpus)
            if self.tuned:
                cell = self.catalogue.crius_view(j.spec.model, j.spec.global_batch, j.spec.n_g, *target)
                cell_run = RunPlan(self.catalogue.cell_model(j.spec.model, j.spec.global_batch, target[0], target[1],
                                                             cell.cell.stages), cell.plan, cell.latency_s, 0.0,
                                   cell.latency_s)
                topo = self.pools[target[0]].topology
                packed = len({topo.machine_of(g) for g in gpus}) == -(-target[1] // topo.gpus_per_machine)
                result.accuracy.append((cell.latency_s, self.truth.seconds(cell_run, gpus), packed))
                full = self.catalogue.run_plan(j.spec.model, j.spec.global_batch, j.spec.n_g, *target, False)
                result.tuning.append((j.step_s, self.truth.seconds(full, gpus)))
            if j.start is None:
                j.start = self.now
        return changed

    def run(self) -> Result:
        result = Result(self.policy.name, self.jobs, 0.0, [], [])
        ready_at = {}
        for j in self.jobs:
            self.reference_rate(j.spec)
            ready_at[j.spec.job_id] = j.spec.arrival + profile_seconds(self.catalogue, j.spec, self.tuned)
            result.profile_gpu_seconds += (profile_seconds(self.catalogue, j.spec, self.tuned) *
                                           (len(self.capacity) if self.tuned else 1))
        self.now, event, rounds = 0.0, False, 0
        last_ready = 0.0
        while any(j.finish is None for j in self.jobs):
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise RuntimeError(f"the run has not finished after {MAX_ROUNDS} rounds")
            ready = [j for j in self.jobs if j.finish is None and ready_at[j.spec.job_id] <= self.now]
            if any(last_ready < ready_at[j.spec.job_id] <= self.now for j in self.jobs):
                event = True
            last_ready = self.now
            if (event or self.policy.every_round) and ready:
                t0 = wallclock.perf_counter()
                targets = self.policy.decide(ready, self.now)
                seconds = wallclock.perf_counter() - t0
                result.decision_seconds.append((seconds, self._apply(targets, ready, result)))
            event = False
            end = self.now + self.round
            total = 0.0
            for j in self.jobs:
                if j.alloc is None or j.finish is not None:
                    continue
                t = self.now
                wait = min(j.restart_left, end - t)
                j.restart_left -= wait
                t += wait
                if t < end:
                    need = (j.spec.iterations - j.done) * j.step_s
                    if need <= end - t:
                        j.done, j.finish = float(j.spec.iterations), t + need
                    else:
                        j.done += (end - t) / j.step_s
                    run_s = min(need, end - t)
                    total += (j.spec.global_batch / j.step_s / self.reference_rate(j.spec)) * run_s / self.round
            for j in self.jobs:
                if j.finish is not None and j.alloc is not None:
                    self.allocators[j.alloc[0]].give(j.gpus)
                    j.alloc, j.gpus = None, ()
                    event = True
            result.throughput.append((self.now, total))
            self.now = end
        result.makespan = max(j.finish for j in self.jobs)
        return result


def simulate(pools, jobs, policy: str, depth: int = SEARCH_DEPTH, catalogue: Catalogue | None = None,
             truth: GroundTruth | None = None) -> Result:
    return CriusSimulation(pools, jobs, policy, depth, catalogue, truth=truth).run()
