"""The event loop: arrivals, scheduling moments, progress, completions.

Exact, not time-stepped. Between events a running job advances analytically
at 1 / step seconds iterations per second, the rate the performance model
(artist/perf) gives for its placement; its
completion is predicted when it (re)starts and the prediction is invalidated
(by a version number) whenever its placement changes. Events at one instant
are all applied before the policy is asked once: completions, then arrivals,
then wake-ups and periodic rounds.

Jobs whose progress their own workload keeps (ManagedWorkload: the elastic jobs of artist/elastic/exact.py,
Crius' jobs of artist/crius/exact.py) run in the same loop: their policy places them on any number of GPUs,
the loop gives them their GPUs, events and rounds, and their workload says what happens inside (restarts,
epochs, plans, the progress made), so that every policy runs in this one loop.

Contention (SimulatorConfig.contention): "isolated" gives every job the rate of
its step alone. "shared" gives jobs that can share links (perf/contention.py:
rack-spanning jobs with a rack in common) the rates of their steps co-simulated
together (PerfModel.rates; a flow or ns-3 fabric shows the slowdown, the
analytical one times each alone): whenever jobs start or stop, every running
job in a contention component that touches their racks is re-rated (progress
folded at the old rate, completion re-predicted). Each job accumulates its
iterations' time at the shared rate and alone (JobState.contention_slowdown),
and the spine's utilisation is recorded whenever it changes
(SimulationResult.spine_utilisation, perf/spine.py). Policies still see
estimates of jobs alone.
"""

from __future__ import annotations

import gc
import heapq
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from artist.cluster import AllocationError, ClusterState
from artist.network.base import FabricModel, fabric_setting
from artist.jobstate import FINISHED, RUNNING, WAITING, JobState, PlacementRecord
from artist.limits import MAX_ROUNDS
from artist.perf.contention import contention_components, shared_uplinks
from artist.perf.spine import graph_spine_bytes_per_step, spine_bytes_per_step, spine_utilisation
from artist.perf.hybrid_job import HybridJobModel, hybrid_job_model
from artist.network.provenance import AnswerCounts
from artist.perf.model import CONTENTION_MODES, PerfModel, as_perf_model
from artist.placement import Placement, shape_to_text
from artist.policies.base import Decision, Observation, Policy, SchedulerView
from artist.topology import Topology
from artist.workload import Job, ModelProfile

if TYPE_CHECKING:
    from artist.managed import ManagedWorkload

COMPLETION, ARRIVAL, WAKE, ROUND = 0, 1, 2, 3
# Idle rounds skipped in one jump when the next event is more than this many rounds away.
IDLE_ROUND_JUMP = 10_000


class SimulationError(RuntimeError):
    pass


@dataclass(frozen=True)
class SimulatorConfig:
    # Periodic scheduling rounds on top of the event-driven ones (arrivals,
    # completions, wake-ups); None turns them off.
    round_interval_s: float | None = 300.0
    # Checkpoint-restore cost paid when a preempted job resumes or a job
    # migrates. Assumed 30 s: Gandiva (OSDI'18, sec. 6) reports migrations of a
    # few seconds to tens of seconds; set it from your own measurements.
    restore_seconds: float = 30.0
    # Check cluster invariants after every decision (tests turn it on).
    check_invariants: bool = False
    # "isolated": every job at its rate alone; "shared": co-runners on common links re-rated together.
    contention: str = "isolated"
    # how "shared" times a component: "phase" (fast, the default) or "cosim" (the backend's co-simulation;
    # the reference): perf/model.py CONTENTION_MODELS
    contention_model: str = "phase"


@dataclass
class SimulationResult:
    jobs: list[JobState]
    makespan: float
    utilisation: list[tuple[float, int]]  # (time, GPUs allocated from then on)
    topology: Topology
    policy: str
    scheduling_calls: int
    events: int
    contention: str = "isolated"
    # shared mode: (time, busiest spine link's utilisation, mean over spine links in use, busiest link)
    spine_utilisation: list = field(default_factory=list)
    # periodic rounds with jobs in the system, plus one per idle stretch (the round loop's count)
    rounds: int = 0
    answers: AnswerCounts = field(default_factory=AnswerCounts)  # which path answered the network questions


class Simulator:
    def __init__(self, topology: Topology, jobs: Sequence[Job], models: Mapping[str, ModelProfile],
                 policy: Policy, perf: PerfModel | FabricModel | None, config: SimulatorConfig = SimulatorConfig(),
                 on_finish: Callable[[int, int, float], None] | None = None,
                 managed: "ManagedWorkload | None" = None):
        self.on_finish = on_finish  # (finished, total, now) after every completion: progress output
        self.topology = topology
        self.policy = policy
        if config.contention not in CONTENTION_MODES:
            raise SimulationError(f"unknown contention mode {config.contention!r}; known: "
                                  f"{', '.join(CONTENTION_MODES)}")
        if perf is None:  # a run of managed jobs only: their workload times them, nothing asks the model
            if jobs or managed is None:
                raise SimulationError("rigid jobs are timed by a performance model: none was given")
        else:
            if isinstance(perf, PerfModel) and perf.contention != config.contention:
                raise SimulationError(f"the performance model's contention mode is {perf.contention!r}, the "
                                      f"simulator's {config.contention!r}")
            perf = as_perf_model(perf, topology)  # a bare FabricModel gets the default compute model
            if perf.contention != config.contention or perf.contention_model != config.contention_model:
                perf = PerfModel(perf.fabric, perf.compute, config.contention, config.contention_model)
            perf.answers = AnswerCounts()  # this run's count (network/provenance.py)
        self.perf = perf
        self.shared = config.contention == "shared"
        self._touched_leaves: set[int] = set()  # uplink leaves of jobs started or stopped since the last re-rating
        self.spine_record: list[tuple[float, float, float, str]] = []
        self._spine_bytes: dict = {}  # (model, GPUs) -> bytes per step on each spine link
        self.config = config
        self.cluster = ClusterState(topology)
        self.states: dict[str, JobState] = {}
        hybrid_models: dict[tuple[str, str], HybridJobModel] = {}
        for job in sorted(jobs, key=lambda j: (j.arrival, j.job_id)):
            if job.job_id in self.states:
                raise SimulationError(f"job id {job.job_id!r} appears twice in the trace")
            if not job.plan and job.model not in models:
                raise SimulationError(f"job {job.job_id}: unknown model {job.model!r}")
            if job.gpus > topology.gpus:
                raise SimulationError(f"job {job.job_id} asks for {job.gpus} GPUs; the cluster has {topology.gpus}")
            if job.plan:
                key = (job.model, job.plan, job.gpus, job.global_batch)
                if key not in hybrid_models:
                    try:
                        hybrid_models[key] = hybrid_job_model(job.model, job.plan, topology, job.gpus,
                                                              job.global_batch)
                    except (KeyError, ValueError) as exc:
                        raise SimulationError(f"job {job.job_id}: {exc.args[0] if exc.args else exc}") from None
                model = hybrid_models[key]
                if model.gpus != job.gpus:
                    raise SimulationError(f"job {job.job_id}: plan {job.plan} uses {model.gpus} GPUs; the job "
                                          f"asks {job.gpus}")
            else:
                model = models[job.model]
            self.states[job.job_id] = JobState(job, model)
        self.managed = managed
        if managed is not None:
            self._add_managed(managed)
        self.now = 0.0
        self._events: list = []
        self._seq = 0
        self._future_work = 0  # ARRIVAL and WAKE events in the heap (_has_future_work)
        self.waiting: dict[str, JobState] = {}  # insertion order = arrival order
        self.running: dict[str, JobState] = {}
        self._placements: dict[str, Placement] = {}  # the running jobs' placements, in start order (their view)
        self.utilisation: list[tuple[float, int]] = [(0.0, 0)]
        self._pending_wake: float | None = None
        self.scheduling_calls = 0
        self.events = 0
        period = getattr(policy, "period_s", None)
        if period is not None and not (isinstance(period, (int, float)) and 0 < period < math.inf):
            raise SimulationError(f"policy {policy.name!r}: period_s must be a positive number of seconds or "
                                  f"None, got {period!r}")
        self.round_interval = float(period) if period is not None else config.round_interval_s
        self._check_rounds_bounded()
        # observations go to a policy that listens (Policy.observe overridden); iterations reported per job
        self._observing = getattr(type(policy), "observe", Policy.observe) is not Policy.observe
        self._observed: dict[str, float] = {}
        self.rounds = 0
        self._next_round_at = math.inf  # time of the queued periodic round
        self._idle = False  # the last round found no job in the system

    def _check_rounds_bounded(self) -> None:
        """Refuse, before any event, a run whose periodic rounds alone would never end. Rounds happen while a
        job is in the system (idle stretches are skipped), and a job stays at least its iterations x its
        compute alone (its step floor: communication only adds), so the longest of those over the round
        interval bounds the rounds from below (a 1e9-iteration job at 1 s rounds was ~1e8 of them)."""
        if not self.round_interval or self.perf is None:
            return
        busy, longest = 0.0, None
        for state in self.states.values():
            seconds = state.job.iterations * self.perf.step_floor(state.model)
            if seconds > busy:
                busy, longest = seconds, state.job.job_id
        rounds = busy / self.round_interval
        if rounds > MAX_ROUNDS:
            raise SimulationError(f"job {longest} runs for at least {busy:.3g} s: {rounds:.3g} periodic rounds of "
                                  f"{self.round_interval:g} s, more than {MAX_ROUNDS:g} (artist.limits); give a "
                                  f"longer round interval, or 0 (rounds off)")

    def _add_managed(self, managed: "ManagedWorkload") -> None:
        try:
            managed.check(self.topology, self.config)
        except ValueError as exc:
            raise SimulationError(str(exc)) from None
        if managed.absent:
            self.cluster = ClusterState(self.topology, managed.absent)
        for state in sorted(managed.states(), key=lambda st: (st.arrival, st.job_id)):
            if state.job_id in self.states:
                raise SimulationError(f"job id {state.job_id!r} appears twice in the workload")
            self.states[state.job_id] = state

    # ---- event queue -------------------------------------------------------
    def _push(self, time: float, kind: int, payload=None) -> None:
        self._seq += 1
        if kind == ARRIVAL or kind == WAKE:
            self._future_work += 1
        heapq.heappush(self._events, (time, kind, self._seq, payload))

    def run(self) -> SimulationResult:
        for state in self.states.values():
            self._push(state.arrival, ARRIVAL, state.job_id)
        if self.round_interval:
            self._push(0.0, ROUND)
            self._next_round_at = 0.0
        finished = 0
        total = len(self.states)
        while self._events and finished < total:
            time = self._events[0][0]
            self.now = time
            reschedule = rounded = False
            while self._events and self._events[0][0] == time:
                _, kind, _, payload = heapq.heappop(self._events)
                self.events += 1
                if kind == ARRIVAL or kind == WAKE:
                    self._future_work -= 1
                if kind == COMPLETION:
                    job_id, version = payload
                    state = self.states[job_id]
                    if state.status == RUNNING and state.version == version:
                        if state.managed and not self._managed_event(state):
                            continue  # one of its own events (a restart or an epoch ended): the next is queued
                        self._finish(state)
                        finished += 1
                        reschedule = True
                        if self.on_finish is not None:
                            self.on_finish(finished, total, time)
                elif kind == ARRIVAL:
                    state = self.states[payload]
                    if state.managed:
                        self.managed.arrive(state, time)
                    state.waiting_since = time
                    self.waiting[payload] = state
                    reschedule = True
                elif kind == WAKE:
                    if self._pending_wake == time:
                        self._pending_wake = None
                    reschedule = True
                elif kind == ROUND:
                    rounded = True
                    if finished < total:
                        self._next_round_at = self._next_round(time)
                        self._push(self._next_round_at, ROUND)
                    self._count_round()
                    if self.managed is not None:
                        self.managed.round_end([st for st in self.running.values() if st.managed], time)
                    if self._observing:
                        for state in self.running.values():
                            if not state.managed:
                                self._observe(state, state.iterations_done(time))
                    reschedule = bool(self.waiting or self.running)
            if reschedule and finished < total:
                self._schedule(rounded)
            if rounded and self.managed is not None and finished < total:
                self._managed_round_begin()
            if self._touched_leaves:
                self._rerate()
            if finished < total and not self.running and not self._has_future_work():
                stuck = ", ".join(list(self.waiting)[:10])
                raise SimulationError(
                    f"simulation stalled at t={self.now:.3f}s: policy {self.policy.name!r} leaves "
                    f"{len(self.waiting)} job(s) waiting on an idle cluster with nothing else to come ({stuck})")
        makespan = max((s.finish for s in self.states.values() if s.finish is not None), default=0.0)
        return SimulationResult(list(self.states.values()), makespan, self.utilisation, self.topology,
                                self.policy.name, self.scheduling_calls, self.events, self.config.contention,
                                self.spine_record, self.rounds,
                                self.perf.answers if self.perf is not None else AnswerCounts())

    def _next_round(self, now: float) -> float:
        """The round after `now`. An idle cluster waiting for an arrival far away skips the empty
        rounds in one jump (an arrival 10^9 s out would otherwise cost 10^9 / interval idle rounds);
        short gaps keep the round-by-round sum, so their round times stay exactly what they were."""
        interval = self.round_interval
        if not (self.waiting or self.running) and self._events:
            gap = self._events[0][0] - now
            if gap > IDLE_ROUND_JUMP * interval:
                return now + math.floor(gap / interval) * interval
        return now + interval

    def _count_round(self) -> None:
        """A round with jobs in the system counts; idle ones count once per idle stretch."""
        idle = not (self.waiting or self.running)
        if not (idle and self._idle):
            self.rounds += 1
        self._idle = idle

    def _has_future_work(self) -> bool:
        """Anything left that could change what the policy decides (not a bare periodic round).
        A count kept by _push and the pop in run(), not a scan of the heap after every event."""
        return self._future_work > 0

    # ---- scheduling --------------------------------------------------------
    def _schedule(self, rounded: bool = False) -> None:
        view = SchedulerView(self.now, self.topology, list(self.waiting.values()), list(self.running.values()),
                             self.cluster.free, self.perf, self.config.restore_seconds, rounded, self._placements)
        self.scheduling_calls += 1
        decision = self.policy.schedule(view)
        if not isinstance(decision, Decision):
            raise SimulationError(f"policy {self.policy.name!r} returned {type(decision).__name__}, not a Decision")
        self._apply(decision)
        if decision.wake_at is not None and decision.wake_at > self.now:
            if self._pending_wake is None or decision.wake_at < self._pending_wake:
                self._pending_wake = decision.wake_at
                self._push(decision.wake_at, WAKE)

    def _apply(self, decision: Decision) -> None:
        wanted = decision.allocations
        running = self.running
        # A policy hands back every job that should run, mostly the running jobs' own Placement
        # objects: only the other entries (starts, migrations) need checking and acting on. Every
        # loop keeps the order of the full walk it replaces (running jobs in start order, wanted
        # in the policy's order), so results do not change.
        changed = []
        for job_id, placement in wanted.items():
            current = running.get(job_id)
            if current is None or current.placement is not placement:
                changed.append((job_id, placement))
        for job_id, placement in changed:
            state = self.states.get(job_id)
            if state is None or state.status == FINISHED:
                raise SimulationError(f"policy {self.policy.name!r} placed unknown or finished job {job_id!r}")
            if placement.size != state.gpus and not state.managed:
                raise SimulationError(f"policy {self.policy.name!r} gave job {job_id} {placement.size} GPUs; "
                                      f"it asks {state.gpus}")
        # Stop first (preemptions, migrations), then start, so GPUs can change hands.
        moved = {job_id for job_id, placement in changed
                 if job_id in running and placement.gpus != running[job_id].placement.gpus}
        if moved or len(running) > len(wanted) - len(changed):
            for job_id, state in list(running.items()):
                target = wanted.get(job_id)
                if target is None or job_id in moved:
                    self._stop(state, migrating=target is not None)
        try:
            for job_id, placement in changed:
                state = self.states[job_id]
                if state.status != RUNNING:
                    self._start(state, placement)
        except AllocationError as exc:
            raise SimulationError(f"policy {self.policy.name!r} made an impossible allocation: {exc}") from exc
        if self.config.check_invariants:
            self.cluster.check_invariants()
        self._record_utilisation()

    def _leave_placement(self, state: JobState, status: str, completed: bool = False) -> None:
        """Fold in the job's progress, give its GPUs back and close its placement record."""
        now = self.now
        self._account_progress(state, completed)
        self.cluster.release(state.job_id)
        state.ran_seconds += now - state.started_at
        state.history[-1].end = now
        state.started_at = None
        state.status = status
        state.version += 1
        del self.running[state.job_id]
        del self._placements[state.job_id]
        if self.shared:
            self._touched_leaves.update(shared_uplinks(state.placement))

    def _stop(self, state: JobState, migrating: bool) -> None:
        self._leave_placement(state, WAITING)
        if state.managed:
            self.managed.stop(state, self.now)
        if migrating:
            state.migrations += 1
        else:
            state.preemptions += 1
        state.waiting_since = self.now
        self.waiting[state.job_id] = state

    def _start(self, state: JobState, placement: Placement) -> None:
        now = self.now
        self.cluster.allocate(state.job_id, placement)
        if state.managed:
            self._start_managed(state, placement)
            return
        estimate = self.perf.rates({state.job_id: (state.model, placement)})[state.job_id]
        state.placement = placement
        state.estimate = estimate
        state.iteration_seconds = estimate.step_seconds
        restore = self.config.restore_seconds if state.has_run else 0.0
        state.anchor_time = now
        state.resume_at = now + restore
        self._mark_running(state)
        self._placements[state.job_id] = placement
        state.history.append(PlacementRecord(now, placement.tier, shape_to_text(placement.canonical_shape),
                                             placement.gpus, state.iteration_seconds,
                                             estimate.exposed_comm_seconds, restore))
        remaining = state.job.iterations - state.anchor_iterations
        self._push(state.resume_at + remaining * state.iteration_seconds, COMPLETION, (state.job_id, state.version))
        state.alone_estimate = estimate
        if self.shared:
            self._touched_leaves.update(shared_uplinks(placement))

    def _mark_running(self, state) -> None:
        """The loop's record of any job that starts now (rigid or managed): its wait ends, it runs."""
        now = self.now
        if state.first_start is None:
            state.first_start = now
        state.waited_seconds += now - state.waiting_since
        state.waiting_since = None
        state.started_at = now
        state.status = RUNNING
        state.version += 1
        self.waiting.pop(state.job_id, None)
        self.running[state.job_id] = state

    def _rerate(self) -> None:
        """Re-rate every running job of a contention component that touches a leaf (rack) where a job
        started or stopped: its step with its co-runners, progress folded at the old rate first."""
        touched, self._touched_leaves = self._touched_leaves, set()
        placements = {job_id: state.placement for job_id, state in self.running.items()}
        affected = [component for component in contention_components(placements)
                    if any(touched.intersection(shared_uplinks(placements[j])) for j in component)]
        # a component of >= 2 jobs forms only when a job starts on a touched leaf, so it is among the affected
        for component in affected:
            if len(component) > 1:
                for job_id in component:
                    self.running[job_id].met_contention = True
        if not affected:
            self._record_spine()
            return
        asked = {j: (self.running[j].model, placements[j]) for component in affected for j in component}
        rates = self.perf.rates(asked)
        for job_id in asked:
            state, estimate = self.running[job_id], rates[job_id]
            if (estimate.step_seconds, estimate.exposed_comm_seconds) == \
                    (state.iteration_seconds, state.estimate.exposed_comm_seconds):
                continue
            self._account_progress(state)
            state.estimate = estimate
            state.iteration_seconds = estimate.step_seconds
            state.version += 1
            state.rate_changes += 1
            remaining = state.job.iterations - state.anchor_iterations
            self._push(max(self.now, state.resume_at) + remaining * state.iteration_seconds, COMPLETION,
                       (state.job_id, state.version))
        self._record_spine()

    def _record_spine(self) -> None:
        """The spine's utilisation now, from the running leaf-spanning jobs' bytes per step and step times."""
        loads = {}
        for job_id, state in self.running.items():
            if not shared_uplinks(state.placement):
                continue
            key = (state.model, state.placement.gpus)
            per_link = self._spine_bytes.get(key)
            if per_link is None:
                algorithm, channels = fabric_setting(self.perf.fabric, "algorithm", "ring"), \
                    fabric_setting(self.perf.fabric, "channels", 1)
                if isinstance(state.model, HybridJobModel):  # its step graph's rack-crossing nodes
                    per_link = graph_spine_bytes_per_step(self.perf.step_graph(state.model, state.placement)[0],
                                                          self.topology, algorithm, channels)
                else:
                    per_link = spine_bytes_per_step(state.placement, state.model.total_bytes, algorithm, channels)
                self._spine_bytes[key] = per_link
            loads[job_id] = (per_link, state.iteration_seconds)
        used = spine_utilisation(self.topology, loads)
        if used:
            busiest = max(used, key=lambda link: (used[link], link))
            row = (self.now, used[busiest], sum(used.values()) / len(used), f"{busiest[0]}:{busiest[1]}")
        else:
            row = (self.now, 0.0, 0.0, "")
        if self.spine_record and self.spine_record[-1][1:] == row[1:]:
            return
        if self.spine_record and self.spine_record[-1][0] == self.now:
            self.spine_record[-1] = row
        else:
            self.spine_record.append(row)

    def _finish(self, state: JobState) -> None:
        self._leave_placement(state, FINISHED, completed=True)
        state.finish = self.now

        self._record_utilisation()

    def _account_progress(self, state: JobState, completed: bool = False) -> None:
        """Fold progress since the anchor into the job's totals."""
        if state.managed:
            self.managed.fold(state, self.now)
            return
        done = float(state.job.iterations) if completed else state.iterations_done(self.now)
        if self._observing:
            self._observe(state, done)
        advanced = done - state.anchor_iterations
        if advanced > 0 and state.estimate is not None:
            state.exposed_comm_total += advanced * state.estimate.exposed_comm_seconds
            state.collective_total += advanced * state.estimate.comm_seconds
            if self.shared:
                state.shared_step_total += advanced * state.estimate.step_seconds
                state.alone_step_total += advanced * state.alone_estimate.step_seconds
        state.anchor_iterations = done
        state.anchor_time = self.now

    # ---- jobs their workload manages (artist/managed.py) ----------------------
    def _start_managed(self, state, placement: Placement) -> None:
        """A managed job on new GPUs: the loop's bookkeeping, then its workload's start (its next own event)."""
        now = self.now
        self._mark_running(state)
        restart = self.managed.start(state, placement, now, self._next_round_at - now)
        self._placements[state.job_id] = placement
        state.history.append(PlacementRecord(now, placement.tier, shape_to_text(placement.canonical_shape),
                                             placement.gpus, state.iteration_seconds, 0.0, restart))
        self._push_managed(state)

    def _push_managed(self, state) -> None:
        """The job's next own event, if its workload knows one yet (else its next round tells)."""
        seconds = self.managed.seconds_to_event(state, self.now)
        if seconds is not None:
            self._push(self.now + seconds, COMPLETION, (state.job_id, state.version))

    def _managed_event(self, state) -> bool:
        """The job's own event: True when it completed; else its next event is queued."""
        if self.managed.own_event(state, self.now):
            return True
        state.version += 1
        self._push_managed(state)
        return False

    def _managed_round_begin(self) -> None:
        """After a round's decisions: the workload's round begins; jobs whose next event moved are re-queued."""
        running = [state for state in self.running.values() if state.managed]
        for state in self.managed.round_begin(running, self.now, self.round_interval):
            state.version += 1
            self._push_managed(state)

    def _observe(self, state: JobState, done: float) -> None:
        """Tell the policy what the job measured since its last observation: its iterations up to `done`
        at its current step time (the rate they ran at: the caller folds progress before a rate changes)."""
        seen = self._observed.get(state.job_id, 0.0)
        if done > seen:
            self._observed[state.job_id] = done
            self.policy.observe(state.job_id, Observation(self.now, state.placement, done - seen,
                                                          state.iteration_seconds))

    def _record_utilisation(self) -> None:
        allocated = self.cluster.allocated_gpus
        if self.utilisation[-1][1] != allocated:
            if self.utilisation[-1][0] == self.now:
                self.utilisation[-1] = (self.now, allocated)
            else:
                self.utilisation.append((self.now, allocated))


def simulate(topology: Topology, jobs: Sequence[Job], models: Mapping[str, ModelProfile], policy: Policy,
             perf: PerfModel | FabricModel | None, config: SimulatorConfig = SimulatorConfig(),
             on_finish: Callable[[int, int, float], None] | None = None,
             managed: "ManagedWorkload | None" = None) -> SimulationResult:
    with rare_full_collections():
        return Simulator(topology, jobs, models, policy, perf, config, on_finish, managed).run()


@contextmanager
def rare_full_collections():
    """Python's cyclic garbage collector with full collections put off while a run lasts (thresholds
    restored after). Why: a trace-scale run keeps millions of step-graph objects alive, which every full
    collection walks; the loop makes few reference cycles. Measured: a 1 000-job FIFO run with shared
    contention 349 -> 294 CPU-s. Answers do not depend on it."""
    saved = gc.get_threshold()
    gc.set_threshold(saved[0], saved[1], max(saved[2], 1000))
    try:
        yield
    finally:
        gc.set_threshold(*saved)

