"""A job's state during a simulation: what policies read and the simulator writes.

Progress is kept as an anchor (iterations done at anchor time) plus a rate, so
reading it at any moment costs O(1) and nothing is advanced tick by tick.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from artist.perf.model import StepEstimate
from artist.placement import Placement
from artist.workload import Job, ModelProfile

WAITING, RUNNING, FINISHED = "waiting", "running", "finished"


@dataclass
class PlacementRecord:
    time: float
    tier: str
    shape: str
    gpus: tuple[int, ...]
    iteration_seconds: float
    exposed_comm_seconds: float
    restore_seconds: float  # checkpoint-restore paid at this start before progress resumed
    end: float | None = None  # when the job left this placement (finish, preemption, migration)


class JobFacts:
    """The job's fixed facts as policies read them (job_id, gpus, arrival), from `self.job`; shared by
    JobState and the elastic loop's view of a rigid job (artist/policies/rigid_in_elastic.py)."""

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def gpus(self) -> int:
        return self.job.gpus

    @property
    def arrival(self) -> float:
        return self.job.arrival


@dataclass(eq=False, kw_only=True)
class LoopRecord:
    """What the event loop keeps of every job, whoever keeps its progress: the loop for a rigid job
    (JobState), its workload for a managed one (artist/managed.py)."""
    status: str = WAITING
    placement: Placement | None = None
    iteration_seconds: float = 0.0  # seconds per iteration (step) on the current placement
    first_start: float | None = None
    finish: float | None = None
    started_at: float | None = None  # start of the current run (None while waiting)
    waiting_since: float | None = None
    waited_seconds: float = 0.0  # total time spent waiting, all episodes before the current one
    ran_seconds: float = 0.0  # total wall time holding GPUs, all runs before the current one
    preemptions: int = 0
    migrations: int = 0
    history: list[PlacementRecord] = field(default_factory=list)
    version: int = 0  # bumps whenever the predicted completion (or next own event) changes

    @property
    def has_run(self) -> bool:
        return self.first_start is not None


@dataclass(eq=False)
class JobState(LoopRecord):
    managed = False  # progress kept by the loop (artist/managed.py: a job whose workload keeps it)
    job: Job
    model: ModelProfile
    # the job's fixed facts, as JobFacts gives them, copied once: policies read them ~10^7 times in a
    # 10 000-job run, and a plain attribute costs a fraction of a property
    job_id: str = field(init=False)
    gpus: int = field(init=False)
    arrival: float = field(init=False)
    estimate: StepEstimate | None = None  # the performance model's step on the current placement
    # progress anchor: iterations done at anchor_time; progress resumes at resume_at
    anchor_time: float = 0.0
    anchor_iterations: float = 0.0
    resume_at: float = 0.0
    # accounting
    exposed_comm_total: float = 0.0  # exposed comm seconds accumulated over finished iterations
    collective_total: float = 0.0
    # contention ("shared" mode): the step alone on the current placement, rate changes by co-runners,
    # and the iterations' time at the shared rates and at the rates alone
    alone_estimate: StepEstimate | None = None
    rate_changes: int = 0
    met_contention: bool = False  # shared mode: ran at some time in a contention component of >= 2 jobs
    shared_step_total: float = 0.0
    alone_step_total: float = 0.0

    def __post_init__(self):
        self.job_id, self.gpus, self.arrival = self.job.job_id, self.job.gpus, self.job.arrival

    @property
    def contention_slowdown(self) -> float:
        """Time of the iterations done at the shared rates / the same iterations alone (1: never slowed)."""
        return self.shared_step_total / self.alone_step_total if self.alone_step_total > 0 else 1.0

    def iterations_done(self, now: float) -> float:
        if self.status != RUNNING:
            return self.anchor_iterations
        progressed = self._progress_seconds(now) / self.iteration_seconds
        return min(float(self.job.iterations), self.anchor_iterations + progressed)

    def _progress_seconds(self, now: float) -> float:
        return max(0.0, now - max(self.anchor_time, self.resume_at))

    def remaining_iterations(self, now: float) -> float:
        return self.job.iterations - self.iterations_done(now)

    def running_seconds(self, now: float) -> float:
        """Total time this job has held GPUs (restores included)."""
        current = now - self.started_at if self.status == RUNNING and self.started_at is not None else 0.0
        return self.ran_seconds + current

    def attained_service(self, now: float) -> float:
        """GPUs x running seconds (Tiresias' 2D attained service)."""
        return self.job.gpus * self.running_seconds(now)

    def waiting_seconds(self, now: float) -> float:
        """Total time spent in the wait queue so far (all episodes)."""
        current = now - self.waiting_since if self.status == WAITING and self.waiting_since is not None else 0.0
        return self.waited_seconds + current

    def ideal_seconds(self) -> float:
        """Running time with no communication on the profile's reference GPU."""
        return self.job.iterations * self.model.compute_seconds
