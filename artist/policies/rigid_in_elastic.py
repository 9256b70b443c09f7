"""The rigid event simulator's policies (FIFO, Gandiva, Tiresias, Dally and its variants) over elastic jobs.

An elastic run (artist/elastic/exact.py) runs its jobs in the exact event loop; the rigid policies
(artist/policies/{fifo,gandiva,tiresias,dally}.py) answer a SchedulerView with placements of GPU ids on one
Topology. RigidPolicyOnElasticJobs is the loop's policy for such a run: at every periodic round (60 s) it
runs the rigid policy's own schedule(), unchanged, on a view of the loop's jobs on their real placements,
and hands its placements to the loop. Nothing of the policies' decision logic is re-written here.

What the policy sees:
- topology: the cluster's pools as one fabric of racks (pool by pool, in the cluster file's order), with
  each pool's racks and machines as they are, so machine / rack / network tiers (Dally's consolidation,
  its timers' size rules, Gandiva's locality) come from the pools' topologies. Pools of different machine
  shapes lie on the largest (the cluster's NodeLayout): a smaller machine's missing GPUs and a smaller
  rack's missing machines are never free, so the policy sees each machine with the GPUs it has.
- jobs: one RigidJobState per job of the loop (a rigid job: the workload's TunedJobs GPU count and batch),
  on the GPUs it holds in the loop. What a JobState answers is read from the loop: iterations done and
  remaining from the oracle at the job's batch (artist/elastic/oracle.py, exact, as a rigid JobState knows
  its iterations), time holding GPUs =
  attained GPU-seconds / GPUs (restarts included, as JobState.running_seconds), ideal seconds = total
  iterations x (s + 1) x the measured compute of one pass at its local batch on the type it runs on (or
  would run on: the type holding most of the GPUs, ties to the faster, the loop's rule), waiting since its
  arrival or its last preemption (simulated time).
- estimate(job, placement): the loop's ground-truth step time of the job alone on that placement (the
  StepTimer: measured compute + the network backend's synchronisation), at the (m, s) the loop would run
  it with; the network model stays behind it, as behind PerfModel.estimate in the rigid simulator.
- restore_seconds: the largest restart delay of the workload's applications (the rigid view has one
  number; the loop charges each job its own, 15-250 s in Sia's tables). Gandiva then migrates only
  when the saving beats the worst restart.

What differs from the rigid simulator (stated, not hidden):
- Decisions happen at round boundaries only (every 60 s): a job that finishes mid-round frees its GPUs
  at the next round, and a Dally timer that expires at time t is acted on at the first round at or after
  t (its wake-up request is not needed: the next round is at most 60 s away).
- A preempted or migrated job pays the loop's restart delay (its application's), not restore_seconds.
- A running job given other GPUs on the same machines, as many on each, keeps the ones it holds: which GPUs
  of a machine does not change its time, so such a move would only cost a restart.
- A placement spanning pools (only the network-agnostic ones make one: Gandiva's first fit, a job larger
  than a pool) runs on its dominant type, timed as the loop times mixed allocations (cluster.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from artist.cluster import FreeMap
from artist.elastic.allocators import RoundPolicy
from artist.elastic.mixed import dominant_type
from artist.elastic.oracle import remaining_iterations
from artist.elastic.spec import fixed_batch_config
from artist.jobstate import JobFacts
from artist.perf.model import StepEstimate
from artist.placement import Placement
from artist.policies.base import Policy, SchedulerView
from artist.policies.pollux.scheduler import JobView



@dataclass(frozen=True)
class RigidJob:
    """What JobState.job gives a policy: id, GPU count, arrival, total iterations at the job's batch."""
    job_id: str
    gpus: int
    arrival: float
    iterations: float


@dataclass(eq=False)
class RigidJobState(JobFacts):
    """The JobState interface the rigid policies read (artist/jobstate.py), for one round of the loop."""
    job: RigidJob
    placement: Placement | None
    waiting_since: float | None
    remaining: float             # iterations left at the job's batch (oracle)
    held_seconds: float          # time holding GPUs so far (restarts included)
    iteration_compute_s: float   # (s + 1) x one pass's measured compute on the job's type
    model: object = None         # the application's ModelProfile (Tiresias reads its skew; estimate() ignores it)

    @property
    def status(self) -> str:
        return "running" if self.placement is not None else "waiting"

    @property
    def has_run(self) -> bool:
        return self.held_seconds > 0

    def iterations_done(self, now: float) -> float:
        return self.job.iterations - self.remaining

    def remaining_iterations(self, now: float) -> float:
        return self.remaining

    def running_seconds(self, now: float) -> float:
        return self.held_seconds

    def attained_service(self, now: float) -> float:
        return self.job.gpus * self.held_seconds

    def waiting_seconds(self, now: float) -> float:
        return now - self.waiting_since if self.placement is None and self.waiting_since is not None else 0.0

    def ideal_seconds(self) -> float:
        return self.job.iterations * self.iteration_compute_s


def fabric_topology(cluster):
    """The cluster's pools as one Topology of racks (pool by pool) and where each node's GPUs are on it, for
    placement decisions only: the GPU map of the cluster's NodeLayout (artist/elastic/cluster.py: pools of
    other machine shapes laid on the largest, the GPUs of no node never free) with the first pool's tiers
    and nothing that times traffic (a bundle spine, no hierarchy, one NIC per GPU)."""
    layout = cluster.layout()
    rack_types = tuple(p.gpu_type for p in cluster.pools for _ in range(p.topology.racks))
    topology = dataclasses.replace(layout.topology, name=f"{cluster.name} (one fabric)", rack_gpu_types=rack_types,
                                   gpu_types={}, spine_model="bundle", hierarchy=None, rack_wiring="switch",
                                   nics_per_machine=0, nic_of_gpu=())
    return topology, layout


class _ElasticView(SchedulerView):
    """SchedulerView whose estimate() is the loop's step time of the job alone (see the module docstring)."""

    def __init__(self, estimator, **fields):
        super().__init__(**fields)
        self._estimator = estimator

    def estimate(self, state, placement: Placement) -> StepEstimate:
        return self._estimator(state, placement)

    def step_floor(self, state) -> float:
        return 0.0  # no compute model here to bound the step by: the trivial bound


class RigidPolicyOnElasticJobs(RoundPolicy):
    """The exact loop's policy for a rigid-simulator policy over elastic jobs (module docstring): at every
    periodic round it hands the rigid policy the loop's jobs as RigidJobStates on their real placements and
    returns its placements. Rigid jobs only: every job must carry its GPU count and batch (job_config
    "both"). Built before the run's jobs exist (the policy registry's builders); run_in_exact_loop binds it to
    them (bound())."""

    def __init__(self, policy: Policy, cluster, context=None):
        super().__init__()
        self.policy = policy
        self.name = policy.name
        self.cluster = cluster
        self.topology, self.layout = fabric_topology(cluster)
        self.node_types = list(cluster.node_types)
        self.context = context
        self.jobs = None  # the run's ElasticJobs (bound())
        self._specs = {j.job_id: j for j in (context.jobs if context is not None else [])}
        self._timer = None
        self._started: dict[str, int] = {}                # job -> start order (view.running's order)
        self._waiting_since: dict[str, float] = {}        # job -> when it last entered the wait queue
        self._starts = 0
        self._total: dict[str, float] = {}               # job -> iterations at its batch from the start
        self._restore = None

    def bound(self, jobs, period_s: float, name: str | None = None) -> "RigidPolicyOnElasticJobs":
        """This policy deciding every `period_s` over the run's elastic jobs (ElasticJobs)."""
        self.jobs, self.period_s = jobs, float(period_s)
        self.name = name or self.name
        return self

    # ---- what the rigid policy is told -------------------------------------
    def _app(self, job_id: str):
        spec = self._specs.get(job_id)
        if spec is None:
            raise ValueError(f"job {job_id}: not among the run's jobs (the policy context lists them)")
        return spec, self.context.apps[spec.app][0], self.context.apps[spec.app][1]

    def _timer_of(self):
        if self._timer is None:
            self._timer = self.context.timer_for(self.cluster)
        return self._timer

    def _type_of(self, per_node: np.ndarray) -> str:
        return dominant_type(self.node_types, per_node)

    def _config(self, job_id: str, gpus: int, gpu_type: str) -> tuple[int, int] | None:
        """(m, s) the loop runs a fixed-batch job with on `gpus` GPUs of the type (jobs.py ElasticJobs.tune)."""
        spec, _, elastic = self._app(job_id)
        return fixed_batch_config(spec.batch, gpus, elastic, gpu_type)

    def _per_node(self, gpus: Sequence[int]) -> np.ndarray:
        return self.layout.per_node(gpus)

    def _estimate(self, state: RigidJobState, placement: Placement) -> StepEstimate:
        per_node = self._per_node(placement.gpus)
        gpu_type = self._type_of(per_node)
        config = self._config(state.job_id, state.gpus, gpu_type)
        if config is None:  # the batch cannot be split over these GPUs: a placement never to choose
            return StepEstimate(float("inf"), float("inf"), 0.0, 0.0, 0.0, None)
        m, s = config
        iteration, compute = self._timer_of().seconds(self._specs[state.job_id].app, gpu_type, per_node, m, s)
        return StepEstimate(iteration, (s + 1) * compute, iteration - (s + 1) * compute, 0.0, 0.0, None)

    def _restore_seconds(self) -> float:
        if self._restore is None:
            apps = {j.app for j in self._specs.values()}
            self._restore = max((self.context.apps[a][1].restart_seconds for a in apps), default=0.0)
        return self._restore

    def _state(self, job: JobView, held: tuple[int, ...] | None) -> RigidJobState:
        """The job as a rigid policy sees it; `held`: the GPUs it runs on (None: it waits)."""
        spec, app, _ = self._app(job.job_id)
        if job.gpus_wanted < 1 or job.batch_wanted < 1:
            raise ValueError(f"job {job.job_id}: a rigid policy needs the job's GPU count and batch "
                             f"(job_config 'both')")
        total = self._total.get(job.job_id)
        if total is None:
            total = self._total[job.job_id] = remaining_iterations(app.replay, 0.0, spec.batch)
        gpu_type = self._type_of(self._per_node(held)) if held else job.gpu_type or self.node_types[0]
        config = self._config(job.job_id, job.gpus_wanted, gpu_type)
        compute = 0.0 if config is None else (config[1] + 1) * float(app.compute[gpu_type](config[0]))
        return RigidJobState(RigidJob(job.job_id, job.gpus_wanted, job.submitted, total),
                             Placement(self.topology, held) if held else None,
                             None if held else self._waiting_since.setdefault(job.job_id, job.submitted),
                             min(job.remaining_iterations, total), job.attained / job.gpus_wanted, compute,
                             (getattr(self.context, "profiles", None) or {}).get(spec.app))

    def free_map(self, running: Sequence) -> FreeMap:
        """The GPUs free on the policy's view of the cluster: none of a node's missing ones, none that
        `running` (the loop's jobs holding GPUs) hold."""
        free = FreeMap.without(self.topology, self.layout.absent)
        free.take(g for state in running for g in state.placement.gpus)
        return free

    # ---- one round ---------------------------------------------------------
    def decide(self, view: SchedulerView, states: Sequence) -> dict[str, Placement]:
        now = view.now
        held = {s.job_id: s.placement.gpus for s in view.running}
        rigid = {s.job_id: self._state(self.jobs.view(s.elastic, now, oracle=True), held.get(s.job_id))
                 for s in states}
        waiting = [rigid[s.job_id] for s in states if s.job_id not in held]
        for s in states:  # a job placed by anyone else (a test's records) ran first, in arrival order
            if s.job_id in held and s.job_id not in self._started:
                self._number_start(s.job_id)
        running = sorted((rigid[j] for j in held), key=lambda s: self._started[s.job_id])
        inner = _ElasticView(self._estimate, now=now, topology=self.topology, waiting=waiting, running=running,
                             free=self.free_map(view.running), perf=None, restore_seconds=self._restore_seconds())
        decision = self.policy.schedule(inner)
        return self._apply(decision.allocations, rigid, held, view, states, now)

    def _number_start(self, job_id: str) -> None:
        """The job starts now: it comes after every running job in view.running's order."""
        self._starts += 1
        self._started[job_id] = self._starts

    def _apply(self, allocations: dict[str, Placement], rigid: dict[str, RigidJobState],
               held: dict[str, tuple[int, ...]], view: SchedulerView, states: Sequence,
               now: float) -> dict[str, Placement]:
        """The rigid policy's placements checked and put on the loop's topology: a running job whose GPUs
        per node did not change keeps its placement (which GPUs of a node does not change its time, so it
        pays no restart); the others in arrival order after them (the order the loop starts them in)."""
        used: set[int] = set()
        for job_id, placement in allocations.items():
            if job_id not in rigid:
                raise ValueError(f"policy {self.policy.name!r} placed job {job_id}, which is not in the round")
            if placement.size != rigid[job_id].gpus:
                raise ValueError(f"policy {self.policy.name!r} gave job {job_id} {placement.size} GPUs; "
                                 f"it runs on {rigid[job_id].gpus}")
            if used.intersection(placement.gpus):
                raise ValueError(f"policy {self.policy.name!r} gave a GPU to two jobs")
            used.update(placement.gpus)
        for job_id in held:
            if job_id not in allocations:  # preempted: back to the wait queue now
                self._started.pop(job_id, None)
                self._waiting_since[job_id] = now
        keep: dict[str, Placement] = {}
        changed: dict[str, Placement] = {}
        for state in states:  # (held, not state.placement: a waiting job's record keeps its last placement)
            placement = allocations.get(state.job_id)
            if placement is None:
                continue
            if state.job_id in held:
                if np.array_equal(self._per_node(placement.gpus), self._per_node(held[state.job_id])):
                    keep[state.job_id] = state.placement
                    continue
            else:
                self._number_start(state.job_id)
            changed[state.job_id] = Placement(view.topology, placement.gpus)
        return {**keep, **changed}
