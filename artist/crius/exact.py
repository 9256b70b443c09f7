"""Crius' jobs in the exact event loop (artist/simulator.py): the workload handed to the loop (a
ManagedWorkload, artist/managed.py) and the loop's record of one job.

A Crius job (artist/policies/crius/jobs.py) reaches the loop once its profiles are done (its arrival plus
profile_seconds), runs the plan its scheduler picks for a (GPU type, count) on the GPUs it is given, pays a
checkpoint-resume on every restart and the plan search the first time it runs on a (type, count), and
progresses at the true step time of that plan on those GPUs (truth.py). Its policy decides at 300 s rounds
(artist/crius/allocators.py); at the start of every round the workload advances each running job through
the round exactly as Crius' evaluation does (restart wait first, then iterations, finishing mid-round if it
does; the loop queues that completion), and records the cluster's normalised throughput of the round.

The pools sit side by side on one GPU map (artist/elastic/cluster.py NodeLayout, one node per machine):
pool GPU g of machine m is the map's GPU at the same place in m's slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from artist.crius.truth import GroundTruth
from artist.elastic.cluster import ElasticCluster, NodeLayout, Pool as MapPool
from artist.jobstate import LoopRecord
from artist.placement import Placement
from artist.policies.crius.cells import PROFILE_SECONDS
from artist.policies.crius.catalogue import Catalogue, RunPlan
from artist.policies.crius.jobs import JobRun, JobSpec, gpu_counts

CHECKPOINT_SECONDS = 30.0  # checkpoint-resume on a restart: chosen (paper silent; Pollux uses 30 s)


def profile_seconds(catalogue: Catalogue, spec: JobSpec, tuned: bool) -> float:
    """How long the job waits for its profiles before the first decision: Crius' InitCells profile 2 plans
    per Cell of PROFILE_SECONDS each, one GPU per type in parallel; the baselines' DP profile of their
    counts, PROFILE_SECONDS each."""
    if not tuned:
        return len(gpu_counts(spec.n_g)) * PROFILE_SECONDS
    cells = sum(catalogue.cell_count(spec.model, spec.n_g, g) for g in gpu_counts(spec.n_g))
    return cells * 2 * PROFILE_SECONDS


@dataclass
class Records:
    """What a run measures besides its jobs (the Result's lists, artist/crius/simulation.py)."""
    throughput: list[tuple[float, float]] = field(default_factory=list)  # per round: (time, normalised sum)
    accuracy: list[tuple[float, float, bool]] = field(default_factory=list)
    tuning: list[tuple[float, float]] = field(default_factory=list)
    profile_gpu_seconds: float = 0.0
    tuning_seconds: float = 0.0
    gpu_seconds: float = 0.0  # GPU-seconds held by running jobs (restart waits included), for the utilisation
    comm_seconds: dict = field(default_factory=dict)  # job -> seconds of its iterations spent on exposed communication


@dataclass(eq=False)
class CriusJobState(LoopRecord):
    """The loop's record of a Crius job (JobState's bookkeeping names)."""
    run: JobRun
    ready_at: float  # its arrival plus its profiling: when it reaches the loop
    managed = True
    model = None
    estimate = None
    job_id: str = field(init=False)
    arrival: float = field(init=False)
    finish_at: float | None = None  # when it completes within the current round (None: not this round)
    compute_s: float = 0.0  # its step with communication free on the current placement (truth.compute_seconds)

    def __post_init__(self):
        self.job_id, self.arrival = self.run.spec.job_id, self.ready_at

    @property
    def gpus(self) -> int:
        return self.run.alloc[1] if self.run.alloc is not None else 0


class CriusWorkload:
    """Crius' jobs on a cluster of pools (GPU type -> artist/policies/crius/cells.py Pool) for the exact loop.
    `tuned`: the jobs run Crius' tuned Cell plans (the Crius scheduler) rather than the full-search plan of
    their data-parallel profile (the baselines). The ground truth (truth) is the loop's, never the policy's."""

    def __init__(self, pools, specs, catalogue: Catalogue, truth: GroundTruth, tuned: bool, round_seconds: float):
        ids = [s.job_id for s in specs]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique")
        self.pools, self.catalogue, self.truth, self.tuned = pools, catalogue, truth, tuned
        self.round = float(round_seconds)
        self.types = list(pools)
        self.cluster = ElasticCluster.of("crius", [MapPool(t, p.topology) for t, p in pools.items()])
        self.layout: NodeLayout = self.cluster.layout()
        self.absent = self.layout.absent
        self.records = Records()
        self.runs = [JobRun(s) for s in sorted(specs, key=lambda j: (j.arrival, j.job_id))]
        self._ref: dict[str, float] = {}
        self._to_loop: dict[tuple[str, int], int] = {}  # (GPU type, pool GPU id) -> the map's id
        for node, gpus in zip(self.cluster.nodes, self.layout.node_gpus):
            per = pools[self.types[node.pool]].topology.gpus_per_machine
            for k, g in enumerate(gpus):
                self._to_loop[(self.types[node.pool], node.machine * per + k)] = g
        self._to_pool = {g: key for key, g in self._to_loop.items()}
        self._states = []
        for run in self.runs:
            if run.spec.gpu_type not in pools:
                raise ValueError(f"job {run.spec.job_id}: GPU type {run.spec.gpu_type!r} is not in the cluster "
                                 f"({', '.join(pools)})")
            self.reference_rate(run.spec)
            wait = profile_seconds(catalogue, run.spec, tuned)
            self.records.profile_gpu_seconds += wait * (len(pools) if tuned else 1)
            self._states.append(CriusJobState(run, run.spec.arrival + wait))

    # ---- GPU ids: the loop's map <-> a pool's own --------------------------
    def pool_gpus(self, gpus) -> tuple[str, tuple[int, ...]]:
        """(GPU type, the pool's own GPU ids) of GPU ids of the loop's map (one pool only)."""
        found = [self._to_pool[g] for g in gpus]
        types = {t for t, _ in found}
        if len(types) != 1:
            raise ValueError(f"a Crius job never spans GPU types; GPUs {tuple(gpus)} span {sorted(types)}")
        return types.pop(), tuple(g for _, g in found)

    def map_gpus(self, gpu_type: str, gpus) -> tuple[int, ...]:
        """The loop's GPU ids of a pool's own GPU ids."""
        return tuple(self._to_loop[(gpu_type, g)] for g in gpus)

    # ---- yardstick ----------------------------------------------------------
    def reference_rate(self, spec: JobSpec) -> float:
        """True samples/s on the job's own request with the full-search plan, packed (the yardstick of the
        cluster's normalised throughput)."""
        from artist.policies.crius.cluster import PoolAllocator

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
            raise ValueError(f"job {job.spec.job_id} was given {g} x {t}, where no plan fits")
        return run

    # ---- ManagedWorkload ----------------------------------------------------
    def check(self, topology, config) -> None:
        if config.contention == "shared":
            raise ValueError("Crius' jobs are timed alone on their GPUs (its evaluation has no contention)")
        if self.layout.topology != topology:
            raise ValueError(f"Crius' pools are laid out on {self.layout.topology.name!r}, the loop runs on "
                             f"{topology.name!r}")

    def states(self) -> list[CriusJobState]:
        return list(self._states)

    def arrive(self, state: CriusJobState, now: float) -> None:
        pass  # its profiles are done: its policy sees it from now

    def start(self, state: CriusJobState, placement: Placement, now: float, to_next_round: float) -> float:
        """Its plan on the new GPUs: the checkpoint-resume of a restart, the plan search on a (type, count)
        new to it, the true step time; Crius' estimate and tuned plan recorded beside the truth."""
        job, records = state.run, self.records
        gpu_type, gpus = self.pool_gpus(placement.gpus)
        target = (gpu_type, len(gpus))
        job.alloc, job.gpus = target, gpus
        run = self._run_plan(job)
        wait = 0.0
        if job.start is not None:
            job.restarts += 1
            wait += CHECKPOINT_SECONDS
        if target not in job.tuned:
            job.tuned.add(target)
            wait += run.tuning_s
            records.tuning_seconds += run.tuning_s
        job.restart_left = wait
        job.step_s = self.truth.seconds(run, gpus)
        state.compute_s = self.truth.compute_seconds(run, gpus)
        if self.tuned:
            cell = self.catalogue.crius_view(job.spec.model, job.spec.global_batch, job.spec.n_g, *target)
            cell_run = RunPlan(self.catalogue.cell_model(job.spec.model, job.spec.global_batch, target[0], target[1],
                                                         cell.cell.stages), cell.plan, cell.latency_s, 0.0,
                               cell.latency_s)
            topo = self.pools[gpu_type].topology
            packed = len({topo.machine_of(g) for g in gpus}) == -(-target[1] // topo.gpus_per_machine)
            records.accuracy.append((cell.latency_s, self.truth.seconds(cell_run, gpus), packed))
            full = self.catalogue.run_plan(job.spec.model, job.spec.global_batch, job.spec.n_g, *target, False)
            records.tuning.append((job.step_s, self.truth.seconds(full, gpus)))
        if job.start is None:
            job.start = now
        state.placement = placement
        state.iteration_seconds = job.step_s
        state.finish_at = None
        return wait

    def seconds_to_event(self, state: CriusJobState, now: float) -> float | None:
        """Its completion, once a round found it within the round."""
        return None if state.finish_at is None else state.finish_at - now

    def own_event(self, state: CriusJobState, now: float) -> bool:
        return True  # its only own event is its completion

    def fold(self, state: CriusJobState, now: float) -> None:
        pass  # each round's progress is made when the round begins (its policy changes nothing mid-round)

    def stop(self, state: CriusJobState, now: float) -> None:
        state.run.alloc, state.run.gpus = None, ()
        state.finish_at = None

    def round_end(self, running, now: float) -> None:
        pass

    def round_begin(self, running, now: float, seconds: float) -> list[CriusJobState]:
        """Every running job through the round (restart wait, then iterations; finishing mid-round if it
        does) and the round's normalised throughput; returns the jobs that complete in it."""
        end = now + self.round
        total = 0.0
        finishing = []
        for state in sorted(running, key=lambda s: (s.run.spec.arrival, s.job_id)):
            j = state.run
            t = now
            wait = min(j.restart_left, end - t)
            j.restart_left -= wait
            t += wait
            run_s = 0.0
            if t < end:
                need = (j.spec.iterations - j.done) * j.step_s
                if need <= end - t:
                    j.done, j.finish = float(j.spec.iterations), t + need
                    state.finish_at = j.finish
                    finishing.append(state)
                else:
                    j.done += (end - t) / j.step_s
                run_s = min(need, end - t)
                total += (j.spec.global_batch / j.step_s / self.reference_rate(j.spec)) * run_s / self.round
            records = self.records
            records.gpu_seconds += j.alloc[1] * (wait + run_s)
            exposed = run_s / j.step_s * (j.step_s - state.compute_s)  # iterations run x each one's exposed part
            records.comm_seconds[j.spec.job_id] = records.comm_seconds.get(j.spec.job_id, 0.0) + exposed
        self.records.throughput.append((now, total))
        return finishing
