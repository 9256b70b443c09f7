"""Gandiva: first-fit placement, migration to a consolidated slot when it pays.

Cluster: 2 racks x 2 machines x 4 GPUs (GPU g on machine g // 4, machine m in rack m // 2).
"""

import pytest

from artist.network.analytical import AnalyticalModel
from artist.placement import MACHINE, RACK, Placement
from artist.policies.registry import make_policy
from artist.simulator import SimulatorConfig, simulate
from artist.workload import Job

from conftest import make_topology
from policy_views import EXPOSED, LOW_SKEW, fill, loaded_outcomes, running, view, waiting


@pytest.fixture
def topo():
    return make_topology()


def test_places_on_lowest_free_gpus_with_no_regard_to_tier(topo):
    # GPU 1 is free on machine 0, machine 1 is empty: first fit takes GPU 1 and GPU 4,
    # spreading over two machines although machine 1 alone could hold the job.
    v = view(topo, 0.0, [waiting("w", 2, 0.0)], [fill(topo, (0, 2, 3))])
    decision = make_policy("gandiva").schedule(v)
    assert decision.allocations["w"].gpus == (1, 4)
    assert decision.allocations["w"].tier == RACK


def test_fifo_head_blocks_the_queue(topo):
    # 4 GPUs free; the head wants 8: nothing behind it starts (same discipline as FIFO).
    v = view(topo, 0.0, [waiting("head", 8, 0.0), waiting("small", 1, 0.0)], [fill(topo, tuple(range(12)))])
    assert set(make_policy("gandiva").schedule(v).allocations) == {"filler"}


X_ITERATIONS = 1_000_000  # long enough that moving to one machine saves more than the 30 s restore


def _spread_job(topo, done_before=0.0):
    # X on GPUs 2,3 (machine 0) and 4,5 (machine 1): rack tier. Machine 2 (GPUs 8-11) is free.
    comm = AnalyticalModel(topo)
    x = running("x", (2, 3, 4, 5), topo, 0.0, 1.0, model=EXPOSED, iterations=X_ITERATIONS, done_before=done_before)
    x.iteration_seconds = view(topo, 0.0, fabric=comm).estimate(x, x.placement).step_seconds
    others = [fill(topo, (0, 1), "f1"), fill(topo, (6, 7), "f2"), fill(topo, (12, 13, 14, 15), "f3")]
    return x, others, comm


def test_migrates_running_job_to_freed_machine(topo):
    x, others, comm = _spread_job(topo)
    v = view(topo, 100.0, [], [x, *others], fabric=comm)
    # The gain must be real for the test to mean anything: one machine is faster for this model,
    # by more than the restore over the remaining iterations.
    saved = x.iteration_seconds - v.estimate(x, Placement(topo, (8, 9, 10, 11))).step_seconds
    assert saved * x.remaining_iterations(100.0) > 30.0
    decision = make_policy("gandiva").schedule(v)
    assert decision.allocations["x"].gpus == (8, 9, 10, 11)
    assert ({j: p.gpus for j, p in decision.allocations.items() if j != "x"}
            == {s.job_id: s.placement.gpus for s in others})


def test_no_migration_when_gain_is_below_restore_cost(topo):
    # 0.1 iteration left: the few milliseconds it would save are far below the 30 s restore.
    x, others, comm = _spread_job(topo, done_before=X_ITERATIONS - 0.1)
    v = view(topo, 0.0, [], [x, *others], fabric=comm)
    assert make_policy("gandiva").schedule(v).allocations["x"] == x.placement


def test_no_migration_without_a_better_tier_free(topo):
    x, others, comm = _spread_job(topo)
    v = view(topo, 100.0, [], [x, *others, fill(topo, (8, 9, 10, 11), "f4")], fabric=comm)
    assert make_policy("gandiva").schedule(v).allocations["x"] == x.placement
    assert make_policy("gandiva", migrate=False).schedule(view(topo, 100.0, [], [x, *others], fabric=comm)) \
        .allocations["x"] == x.placement


def test_simulated_migration_happens_when_the_slot_frees(topo):
    # First fit at t = 0 (arrival order, ties by id): a -> GPUs 0,1; b -> 2-5 (two machines); c -> 6,7;
    # d -> 8-15. The cluster is full. When a finishes, machine 0 (GPUs 0-3) holds b's two GPUs plus a's
    # two freed ones: b must move there at that very moment, once, and run on one machine from then on.
    jobs = [Job("a", 0.0, "spread", 2, 2000), Job("b", 0.0, "exposed", 4, 200_000),
            Job("c", 0.0, "spread", 2, 400_000), Job("d", 0.0, "spread", 8, 400_000)]
    models = {"spread": LOW_SKEW, "exposed": EXPOSED}
    result = simulate(topo, jobs, models, make_policy("gandiva"), AnalyticalModel(topo),
                      SimulatorConfig(round_interval_s=None, check_invariants=True))
    by_id = {s.job_id: s for s in result.jobs}
    x = by_id["b"]
    assert [r.gpus for r in x.history] == [(2, 3, 4, 5), (0, 1, 2, 3)]
    assert x.history[1].time == by_id["a"].finish
    assert x.history[1].tier == MACHINE and x.history[1].restore_seconds == 30.0
    assert x.migrations == 1 and x.preemptions == 0
    assert all(by_id[j].migrations == 0 for j in "acd")


def test_best_tier_with_a_jobs_gpus_back_is_read_off_the_counts():
    """FreeMap.best_tier_with(n, gpus): the tier best_tier_possible gives once gpus are given back, by hand.
    2 racks x 2 machines x 4 GPUs; free: machine 0 has 1 GPU free, machine 2 has 3, the rest busy."""
    from artist.cluster import FreeMap
    from artist.placement import NETWORK

    topo = make_topology(racks=2, machines_per_rack=2, gpus_per_machine=4)
    free = FreeMap(topo, [(3,), (), (8, 9, 10), ()])
    assert free.best_tier_with(4, (0, 1, 2)) == MACHINE  # machine 0 whole again
    assert free.best_tier_with(4, (4, 5, 6)) == RACK  # rack 0: 1 free + 3 given back, no machine with 4
    assert free.best_tier_with(4, (4, 12, 13)) == RACK  # rack 1: 3 free + 2 back on machine 3; no machine has 4
    assert free.best_tier_with(8, (4, 5, 6, 12)) == NETWORK  # rack 0: 1 + 3 = 4, rack 1: 3 + 1 = 4
    assert free.best_tier_with(9, (4,)) is None  # 4 free + 1 back
    assert free.total_free == 4 and free.free_by_machine == [(3,), (), (8, 9, 10), ()]  # untouched


class _Forgetful:
    """Gandiva asked afresh at every moment (a new instance each time): the reference for what the
    policy's memory between moments (the jobs it no longer looks at, its tier and version counters)
    must not change."""

    name = "gandiva"

    def schedule(self, view):
        return make_policy("gandiva").schedule(view)

    def parameters(self):
        return {}


@pytest.mark.parametrize("topology_file", ["dally-3tier.yaml", "dally-3tier-ecmp-4to1-100g.yaml"])
def test_memory_between_moments_changes_no_decision(topology_file):
    remembered = loaded_outcomes(make_policy("gandiva"), 3, (1, 2, 4, 8, 16), topology_file)
    fresh = loaded_outcomes(_Forgetful(), 3, (1, 2, 4, 8, 16), topology_file)
    assert sum(m for _, _, _, m, _ in fresh) > 0  # migrations happen, so the comparison means something
    assert remembered == fresh
