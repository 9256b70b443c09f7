"""The loop's stall check: an idle cluster with waiting jobs is an error only when no arrival or
wake-up is left to come (a bare periodic round does not count)."""

import pytest

from artist.network.analytical import AnalyticalModel
from artist.policies.base import Decision, Policy
from artist.simulator import SimulationError, SimulatorConfig, simulate
from artist.workload import Job, ModelProfile

from conftest import make_topology

MODELS = {"small": ModelProfile("small", (2_000_000,) * 10, 0.1, "A100")}


def run(jobs, policy, round_interval_s=None):
    topo = make_topology()
    return simulate(topo, jobs, MODELS, policy, AnalyticalModel(topo),
                    SimulatorConfig(round_interval_s=round_interval_s, check_invariants=True))


class StartAfter(Policy):
    """Places nothing before `start`; asks to be woken there (once) if `wake`; then FIFO-like."""

    name = "start-after"

    def __init__(self, start: float, wake: bool = True):
        self.start, self.wake = start, wake
        self.calls: list[float] = []

    def schedule(self, view):
        self.calls.append(view.now)
        allocations = view.current_allocations()
        if view.now < self.start:
            return Decision(allocations, wake_at=self.start if self.wake else None)
        free = view.plan()
        for s in view.waiting:
            p = free.find(s.gpus)
            if p is not None:
                free.take(p.gpus)
                allocations[s.job_id] = p
        return Decision(allocations)


def test_jobs_waiting_on_an_idle_cluster_are_fine_while_arrivals_are_to_come():
    jobs = [Job(f"j{i}", 10.0 * i, "small", 1, 10) for i in range(5)]
    policy = StartAfter(start=40.0, wake=False)  # the last arrival (t = 40) starts them all
    result = run(jobs, policy)
    assert all(s.first_start == 40.0 for s in result.jobs)


def test_a_pending_wake_up_keeps_the_simulation_going():
    jobs = [Job("a", 0.0, "small", 1, 10), Job("b", 5.0, "small", 2, 10)]
    policy = StartAfter(start=100.0)
    result = run(jobs, policy)
    assert [s.first_start for s in result.jobs] == [100.0, 100.0]
    assert policy.calls[:3] == [0.0, 5.0, 100.0]  # the two arrivals, then the wake-up


def test_stall_is_reported_once_no_arrival_or_wake_up_is_left():
    # Nothing placed before t = 1000 and no wake-up asked: after the last arrival (t = 20) nothing can
    # change the policy's mind, even with periodic rounds still coming.
    jobs = [Job(f"j{i}", 10.0 * i, "small", 1, 10) for i in range(3)]
    with pytest.raises(SimulationError, match=r"stalled at t=20\.000s.*3 job\(s\) waiting"):
        run(jobs, StartAfter(start=1000.0, wake=False))
    with pytest.raises(SimulationError, match=r"stalled at t=20\.000s"):
        run(jobs, StartAfter(start=1000.0, wake=False), round_interval_s=300.0)


def test_stall_after_a_wake_up_that_changes_nothing():
    class WakeOnceThenIdle(Policy):
        name = "wake-once"

        def schedule(self, view):
            return Decision({}, wake_at=50.0 if view.now < 50.0 else None)

    with pytest.raises(SimulationError, match=r"stalled at t=50\.000s"):
        run([Job("a", 0.0, "small", 1, 10)], WakeOnceThenIdle())


def test_idle_gaps_between_arrivals_run_to_the_end():
    # Every job finishes long before the next arrives: the cluster is idle with nothing waiting
    # at most events, and every arrival is still to come.
    jobs = [Job(f"j{i:03d}", 1000.0 * i, "small", 1 + i % 4, 5) for i in range(200)]
    result = run(jobs, StartAfter(start=0.0), round_interval_s=300.0)
    assert all(s.finish is not None and s.first_start == s.arrival for s in result.jobs)
