"""The event loop against conservation laws and hand-computed job times."""

import io

import pytest

from artist.metrics import job_table, summary
from artist.network.analytical import AnalyticalModel
from artist.placement import NETWORK, placement_from_shape
from artist.policies.base import Decision, Policy
from artist.policies.registry import make_policy
from artist.simulator import SimulationError, SimulatorConfig, simulate
from artist.workload import Job, JobMix, ModelProfile, poisson_jobs

from conftest import MACHINE_LINK_US, MACHINE_SWITCH_US, NVSWITCH_GBPS, make_topology

MODELS = {
    # one bucket ready at the end of backward: its all-reduce is fully exposed
    "big": ModelProfile("big", (100_000_000,), 0.2, "A100", bucket_cap_bytes=100_000_000),
    # small buckets, mostly hidden behind the backward pass
    "small": ModelProfile("small", (2_000_000,) * 10, 0.1, "A100"),
}


def run(jobs, policy="fifo", topo=None, **config):
    topo = topo or make_topology(gpus_per_machine=8)
    config.setdefault("check_invariants", True)
    return simulate(topo, jobs, MODELS, make_policy(policy) if isinstance(policy, str) else policy,
                    AnalyticalModel(topo), SimulatorConfig(**config))


def test_single_job_alone_runs_compute_plus_comm_per_iteration():
    iters = 1000
    result = run([Job("j", 5.0, "big", 8, iters)])
    # 8-GPU ring on one machine, computed by hand (see test_analytical)
    nv = NVSWITCH_GBPS * 1e9 / 8
    ring = 8.4e-6 + 14 * (3.4e-6 + (2 * MACHINE_LINK_US + MACHINE_SWITCH_US) * 1e-6 + 100e6 / 8 / nv)
    (state,) = result.jobs
    assert state.first_start == 5.0
    assert state.finish - state.arrival == pytest.approx(iters * (0.2 + ring), rel=1e-12)
    assert result.makespan == pytest.approx(5.0 + iters * (0.2 + ring), rel=1e-12)


def _trace(n=60, seed=3):
    return poisson_jobs(n, JobMix(("big", "small"), gpu_choices=(1, 2, 4, 8, 12, 16, 24),
                                  min_iterations=100, max_iterations=5000), 20.0, seed)


def _ran_iterations(state):
    """Iterations executed, re-derived from the placement history alone."""
    total = 0.0
    for rec in state.history:
        total += max(0.0, rec.end - rec.time - rec.restore_seconds) / rec.iteration_seconds
    return total


class _PreemptEveryOther(Policy):
    """A test policy that churns: at every call it runs the waiting jobs that fit
    (most consolidated first) and preempts running jobs that have been running
    for more than 200 s, so preemption and restore paths get exercised."""

    name = "churn"

    def schedule(self, view):
        keep = {s.job_id: s.placement for s in view.running if view.now - s.history[-1].time < 200}
        free = view.plan()
        for s in view.running:
            if s.job_id not in keep:
                free.give(s.placement.gpus)
        for s in view.waiting + [s for s in view.running if s.job_id not in keep]:
            if s.job_id in keep:
                continue
            p = free.find(s.gpus)
            if p is not None:
                free.take(p.gpus)
                keep[s.job_id] = p
        return Decision(keep, wake_at=view.now + 250)


@pytest.mark.parametrize("policy", ["fifo", _PreemptEveryOther()])
def test_iteration_conservation_and_jct_bounds(policy):
    jobs = _trace()
    result = run(jobs, policy, restore_seconds=7.0)
    assert all(s.finish is not None for s in result.jobs)
    for s in result.jobs:
        assert _ran_iterations(s) == pytest.approx(s.job.iterations, rel=1e-9)
        assert s.finish - s.arrival >= s.ideal_seconds() - 1e-9
        # restores are only paid on resumption
        assert s.history[0].restore_seconds == 0.0
        assert all(r.restore_seconds == 7.0 for r in s.history[1:])
    if isinstance(policy, Policy):
        assert sum(s.preemptions for s in result.jobs) > 0


@pytest.mark.parametrize("policy", ["fifo", _PreemptEveryOther()])
def test_no_gpu_is_ever_held_by_two_jobs(policy):
    result = run(_trace(80, seed=5), policy)
    intervals = {}
    for s in result.jobs:
        for rec in s.history:
            for g in rec.gpus:
                intervals.setdefault(g, []).append((rec.time, rec.end))
    for g, spans in intervals.items():
        spans.sort()
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert b0 >= a1, f"GPU {g} held twice: {a0}-{a1} and {b0}-{b1}"


def test_gpu_utilisation_matches_job_gpu_seconds():
    result = run(_trace(40, seed=9))
    gpu_seconds = sum(s.gpus * (rec.end - rec.time) for s in result.jobs for rec in s.history)
    util = summary(result)["gpu_utilisation_fraction"]
    assert util * result.topology.gpus * result.makespan == pytest.approx(gpu_seconds, rel=1e-9)


def test_identical_inputs_give_identical_tables():
    out = []
    for _ in range(2):
        buf = io.StringIO()
        job_table(run(_trace(50, seed=11))).to_csv(buf, index=False)
        out.append(buf.getvalue())
    assert out[0] == out[1]


def test_fifo_is_strict_arrival_order_with_consolidated_placement():
    # 16-GPU cluster (2 racks x 2 machines x 4): a 12-GPU job blocks a 1-GPU job behind it.
    topo = make_topology()
    jobs = [Job("a", 0.0, "small", 8, 100), Job("b", 1.0, "small", 12, 100), Job("c", 2.0, "small", 1, 100)]
    result = run(jobs, topo=topo)
    by_id = {s.job_id: s for s in result.jobs}
    assert by_id["a"].history[0].tier == "rack"  # 8 GPUs = two 4-GPU machines of one rack
    assert by_id["b"].first_start == pytest.approx(by_id["a"].finish)
    assert by_id["c"].first_start >= by_id["b"].first_start
    assert by_id["b"].history[0].tier == NETWORK


def test_policy_that_never_places_is_reported_as_stalled():
    class Idle(Policy):
        name = "idle"

        def schedule(self, view):
            return Decision({})

    with pytest.raises(SimulationError, match="stalled"):
        run([Job("j", 0.0, "small", 1, 10)], Idle(), round_interval_s=None)


def test_rigid_jobs_without_a_performance_model_are_rejected():
    """Only a run of managed jobs (elastic, Crius', timed by their workload) may leave the model out."""
    topo = make_topology(gpus_per_machine=8)
    with pytest.raises(SimulationError, match="performance model"):
        simulate(topo, [Job("j", 0.0, "small", 1, 10)], MODELS, make_policy("fifo"), None)


def test_job_larger_than_cluster_is_rejected():
    with pytest.raises(SimulationError, match="asks for 999 GPUs"):
        run([Job("j", 0.0, "small", 999, 10)])


def test_oversized_allocation_by_a_policy_is_an_error():
    class Greedy(Policy):
        name = "greedy"

        def schedule(self, view):
            topo = view.topology
            return Decision({s.job_id: placement_from_shape(topo, [[4]]) for s in view.waiting})

    with pytest.raises(SimulationError, match="impossible allocation|GPUs"):
        run([Job("a", 0.0, "small", 4, 10), Job("b", 0.0, "small", 4, 10)], Greedy(), topo=make_topology())


def test_a_run_puts_off_full_garbage_collections_and_restores_the_thresholds_even_on_error():
    import gc

    class Watching(Policy):
        name = "watching"
        seen: list = []

        def schedule(self, view):
            self.seen.append(gc.get_threshold())
            return make_policy("fifo").schedule(view)

    before = gc.get_threshold()
    policy = Watching()
    run([Job("j", 0.0, "small", 1, 10)], policy)
    assert policy.seen and all(t[2] >= 1000 for t in policy.seen)
    assert gc.get_threshold() == before
    with pytest.raises(SimulationError):
        run([Job("j", 0.0, "small", 999, 10)])
    assert gc.get_threshold() == before
