"""The whole suite: registered under its names, finishes a shared trace, deterministic, honest parameters."""

import pytest

from artist.metrics import summary
from artist.network.analytical import AnalyticalModel
from artist.policies.registry import make_policy, policy_names
from artist.simulator import SimulatorConfig, simulate
from artist.workload import JobMix, poisson_jobs

from conftest import make_topology
from policy_views import EXPOSED, HIGH_SKEW, LOW_SKEW

SUITE = ("fifo", "gandiva", "tiresias", "dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated")
MODELS = {m.name: m for m in (LOW_SKEW, HIGH_SKEW, EXPOSED)}


def test_every_policy_is_registered():
    assert set(SUITE) <= set(policy_names())


@pytest.mark.parametrize("name", SUITE)
def test_policy_finishes_a_trace_and_repeats_itself(name):
    topo = make_topology()
    jobs = poisson_jobs(50, JobMix(tuple(sorted(MODELS)), gpu_choices=(1, 2, 4, 6, 8, 12),
                                   min_iterations=100, max_iterations=10_000), 10.0, seed=11)

    def run():
        # Small restore and rounds: preemptions and migrations get exercised on this short trace.
        result = simulate(topo, jobs, MODELS, make_policy(name), AnalyticalModel(topo),
                          SimulatorConfig(round_interval_s=60.0, restore_seconds=5.0, check_invariants=True))
        return result, summary(result)

    result, first = run()
    _, again = run()
    assert first == again
    assert first["finished"] == len(jobs)
    for s in result.jobs:
        # Conservation: a job's time in the system is its waits plus its runs.
        assert s.finish - s.arrival == pytest.approx(s.waited_seconds + s.ran_seconds, abs=1e-6)


def test_parameters_are_reported():
    assert make_policy("dally-manual").parameters() == {"machine_timer_s": 43200.0, "rack_timer_s": 43200.0}
    assert make_policy("tiresias").parameters()["thresholds"] == [57600.0]
    assert make_policy("dally", history_s=3600).parameters() == {"timers": "auto", "history_s": 3600.0}
    with pytest.raises(KeyError, match="no parameter"):
        make_policy("dally-nowait", machine_timer_s=1.0)
