"""What the loop offers every policy besides schedule(): its own period (Policy.period_s) and the jobs'
measurements (Policy.observe), tested on the exact loop with hand-checkable expectations."""

import math

import pytest

from artist.network.analytical import AnalyticalModel
from artist.policies.fifo import Fifo
from artist.simulator import SimulationError, SimulatorConfig, simulate
from artist.workload import Job

from conftest import make_topology
from policy_views import EXPOSED, LOW_SKEW


class Listening(Fifo):
    """FIFO that keeps every observation and the times it was asked."""

    name = "listening"

    def __init__(self, period_s=None):
        self.period_s = period_s
        self.seen: dict[str, list] = {}
        self.asked: list[float] = []

    def schedule(self, view):
        self.asked.append(view.now)
        return super().schedule(view)

    def observe(self, job_id, observation):
        self.seen.setdefault(job_id, []).append(observation)


def _jobs():
    # 2 racks x 2 machines x 4 GPUs: "big" takes two machines, the others queue behind it and start when
    # it ends; "spread" runs on 8 GPUs across a rack's machines
    return [Job("big", 0.0, "exposed", 8, 3000), Job("a", 10.0, "spread", 4, 5000),
            Job("b", 20.0, "spread", 8, 4000), Job("c", 30.0, "exposed", 16, 2000)]


def _run(policy, **config):
    topo = make_topology()
    models = {"spread": LOW_SKEW, "exposed": EXPOSED}
    return simulate(topo, _jobs(), models, policy, AnalyticalModel(topo),
                    SimulatorConfig(check_invariants=True, **config))


def test_observations_add_up_to_every_job_and_report_its_measured_step():
    policy = Listening(period_s=60.0)
    result = _run(policy)
    for state in result.jobs:
        seen = policy.seen[state.job_id]
        # conservation: what was reported is what the job did, no more, no less
        assert sum(o.iterations for o in seen) == pytest.approx(state.job.iterations, rel=1e-12)
        assert [o.time for o in seen] == sorted(o.time for o in seen) and seen[-1].time == state.finish
        for o in seen:
            # the step it reported is the one it ran at on those GPUs (its placement record then)
            record = next(r for r in state.history if r.time < o.time <= (r.end if r.end is not None else math.inf))
            assert o.placement.gpus == record.gpus and o.step_seconds == record.iteration_seconds
        # a round every 60 s while it ran reports its progress since the last one: each span is at most a
        # round's worth of iterations
        assert max(o.iterations for o in seen) <= 60.0 / min(r.iteration_seconds for r in state.history) + 1e-9


def test_a_policy_with_a_period_is_asked_at_every_multiple_of_it():
    policy = Listening(period_s=45.0)
    result = _run(policy, round_interval_s=None)
    rounds = [t for t in policy.asked if t % 45.0 == 0.0]
    assert rounds == [45.0 * k for k in range(len(rounds))]
    assert rounds[-1] + 45.0 >= result.makespan  # asked until the last job ended


def test_without_a_period_the_simulators_rounds_apply():
    events_only = Listening()
    result = _run(events_only, round_interval_s=None)
    # arrivals and completions only (the last completion ends the run: nobody is left to schedule)
    assert set(events_only.asked) == {0.0, 10.0, 20.0, 30.0} | {s.finish for s in result.jobs} - {result.makespan}
    with_rounds = Listening()
    _run(with_rounds, round_interval_s=100.0)
    assert {100.0, 200.0} <= set(with_rounds.asked)


@pytest.mark.parametrize("period", [0.0, -5.0, math.inf, "60"])
def test_a_bad_period_is_refused(period):
    with pytest.raises(SimulationError, match="period_s"):
        _run(Listening(period_s=period))


def test_a_policy_that_does_not_listen_changes_nothing():
    plain, listening = _run(Fifo()), _run(Listening())
    assert [(s.job_id, s.finish) for s in plain.jobs] == [(s.job_id, s.finish) for s in listening.jobs]
