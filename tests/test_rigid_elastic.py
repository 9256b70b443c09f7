"""The rigid simulator's policies (FIFO, Gandiva, Dally and its variants) in the elastic loop, through
artist/policies/rigid_in_elastic.py: their decisions against hand-worked expectations, and the loop's
capacity never exceeded."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from artist.elastic.applications import heterogeneous_applications
from artist.elastic.cluster import ElasticCluster, Pool, load_cluster
from artist.elastic.hetero_runs import RunContext, read_jobs
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobSpec
from artist.policies.pollux.registry import RIGID_IN_ELASTIC, make_elastic_policy
from artist.policies.pollux.scheduler import JobView
from artist.shipped import TOPOLOGIES_DIR
from artist.topology import Topology
from artist.workload import load_models

ROOT = TOPOLOGIES_DIR.parent
PHILLY = ROOT / "workloads" / "sia" / "workloads" / "philly" / "workload-1.csv"


@functools.lru_cache(maxsize=1)
def _apps():
    return heterogeneous_applications()


@functools.lru_cache(maxsize=1)
def _models():
    return load_models()


def _pool(gpu_type: str, racks: int, machines: int, gpus: int) -> Pool:
    # Links as sia-hetero-64's t4 pool; a 10:1 spine, so that a rack-crossing ring flow gets 5 Gb/s of its NIC's 12.5
    test = "invented for the test"
    tiers = {"machine": {"bandwidth_gbps": 126, "link_latency_us": 0.5, "switch_latency_us": 0.5, "source": test},
             "rack": {"bandwidth_gbps": 12.5, "link_latency_us": 5, "switch_latency_us": 1, "source": test},
             "spine": {"bandwidth_gbps": 12.5, "link_latency_us": 5, "switch_latency_us": 1, "source": test,
                       "oversubscription": 10}}
    topo = Topology.from_mapping({"name": f"test-{gpu_type}", "racks": racks, "machines_per_rack": machines,
                                  "gpus_per_machine": gpus, "gpu_type": gpu_type, "tiers": tiers}, "<test>")
    return Pool(gpu_type, topo)


def _context(cluster, jobs):
    return RunContext(_apps(), list(jobs), _models()).policy_context(cluster)


def _view(job: ElasticJobSpec, now: float, current, attained: float = 0.0, remaining: float = 1e6) -> JobView:
    return JobView(job.job_id, None, np.asarray(current, dtype=int), age=now - job.arrival, restarts=0,
                   attained=attained, submitted=job.arrival, gpus_wanted=job.gpus, batch_wanted=job.batch,
                   gpu_type="t4", category="rigid", remaining_iterations=remaining)


def test_dally_on_an_empty_two_rack_pool_takes_one_machine_then_one_rack():
    cluster = ElasticCluster.of("two-racks", [_pool("t4", 2, 2, 4)])  # nodes 0, 1: rack 0; nodes 2, 3: rack 1
    small = ElasticJobSpec("small", 0.0, "cifar10", gpus=4, batch=512)
    big = ElasticJobSpec("big", 0.0, "cifar10", gpus=8, batch=1024)
    for name in ("dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated"):
        allocator, _ = make_elastic_policy(name, {}, cluster, 0, _context(cluster, [small]))
        assert allocator.allocate([_view(small, 0.0, [0, 0, 0, 0])])["small"].tolist() == [4, 0, 0, 0], name
        allocator, _ = make_elastic_policy(name, {}, cluster, 0, _context(cluster, [big]))
        got = allocator.allocate([_view(big, 0.0, [0, 0, 0, 0])])["big"].tolist()
        assert got in ([4, 4, 0, 0], [0, 0, 4, 4]), (name, got)


def test_dally_waits_for_its_rack_timer_then_takes_the_cross_rack_placement():
    # 2 racks x 2 machines x 2 GPUs; a and b hold one machine in each rack, so the 4-GPU job c (one rack
    # would do: its best tier) is offered only one machine per rack. Its machine timer is 0 (4 GPUs > a
    # machine), its rack timer 190 s: arriving at 50 s, it accepts the cross-rack offer once it has waited
    # 190 s, at 240 s, which is a round boundary (rounds every 60 s: 0, 60, ..., 240).
    cluster = ElasticCluster.of("two-racks", [_pool("t4", 2, 2, 2)])
    a = ElasticJobSpec("a", 0.0, "cifar10", gpus=2, batch=256)
    b = ElasticJobSpec("b", 0.0, "cifar10", gpus=2, batch=256)
    c = ElasticJobSpec("c", 50.0, "cifar10", gpus=4, batch=512)
    expected = {"dally-manual": 240.0, "dally-nowait": 60.0, "dally": 60.0, "dally-fullyconsolidated": None}
    for name, start in expected.items():
        params = {"machine_timer_s": 1000.0, "rack_timer_s": 190.0} if name == "dally-manual" else {}
        allocator, _ = make_elastic_policy(name, params, cluster, 0, _context(cluster, [a, b, c]))
        started = None
        for now in np.arange(0.0, 601.0, 60.0):
            views = [_view(a, now, [2, 0, 0, 0], attained=2 * now), _view(b, now, [0, 0, 2, 0], attained=2 * now)]
            if now >= c.arrival:
                views.append(_view(c, now, [0, 1, 0, 1] if started is not None else [0, 0, 0, 0]))
            got = allocator.allocate(views)
            assert got["a"].tolist() == [2, 0, 0, 0] and got["b"].tolist() == [0, 0, 2, 0], (name, now)
            if "c" in got and started is None and got["c"].sum():
                assert got["c"].tolist() == [0, 2, 0, 2], (name, got["c"])
                started = now
            if started is not None:
                break
        assert started == start, (name, started)


def test_gandiva_starts_first_fit_then_migrates_into_one_rack_when_it_frees():
    # a holds machine 0; b (4 GPUs) starts on the lowest free GPUs: machines 1 and 2, across the racks.
    # When a finishes, b moves into rack 0 (machines 0 and 1): its step there is shorter (no 5 Gb/s spine share),
    # and over the job's ~1e4 iterations left the saving beats its 50 s restart. Without migration b stays.
    cluster = ElasticCluster.of("two-racks", [_pool("t4", 2, 2, 2)])
    a = ElasticJobSpec("a", 0.0, "cifar10", gpus=2, batch=256)
    b = ElasticJobSpec("b", 0.0, "cifar10", gpus=4, batch=512)
    for migrate, after in ((True, [2, 2, 0, 0]), (False, [0, 2, 2, 0])):
        allocator, _ = make_elastic_policy("gandiva", {"migrate": migrate}, cluster, 0, _context(cluster, [a, b]))
        first = allocator.allocate([_view(a, 0.0, [2, 0, 0, 0]), _view(b, 0.0, [0, 0, 0, 0])])
        assert first["b"].tolist() == [0, 2, 2, 0]
        second = allocator.allocate([_view(b, 60.0, [0, 2, 2, 0], attained=240.0)])
        assert second["b"].tolist() == after, migrate


@pytest.mark.parametrize("policy", ["fifo", "gandiva", "dally"])
def test_on_machines_of_several_shapes_a_rigid_policy_holds_only_gpus_that_exist(policy):
    """Sia's 64-GPU cluster (6 x 4 T4, 3 x 8 RTX, 2 x 8 A100) as one fabric of 8-GPU slots: the policy's
    placements never use a T4 slot's missing GPUs or a short rack's missing machines, no node ever holds
    more than it has, and every job ends."""
    cluster = load_cluster(TOPOLOGIES_DIR / "clusters" / "sia-hetero-64.yaml")
    capacity = np.array(cluster.capacity)
    jobs = [ElasticJobSpec(j.job_id, j.arrival / 8, j.app, j.gpus, j.batch) for j in read_jobs(PHILLY, "both", 24)]
    seen = []

    def check(views, out):
        total = sum(out.values())
        assert np.all(total <= capacity), total
        seen.append(int(total.sum()))

    result = _run(cluster, policy, jobs, None, check)
    assert all(j.finish is not None for j in result.jobs)
    assert max(seen) > 24, "the cluster was never loaded: the bound is not tested"
    allocator, _ = make_elastic_policy(policy, {}, cluster, 0, None)
    absent = set(cluster.layout().absent)
    free = [g for machine in allocator._sync([]).free_by_machine for g in machine]
    assert len(free) == 64 and not absent.intersection(free)


def _run(cluster, policy: str, jobs, params=None, check=None):
    ctx = RunContext(_apps(), list(jobs), _models())
    allocator, seen = make_elastic_policy(policy, params or {}, cluster, 0, ctx.policy_context(cluster))
    if check is not None:
        inner = allocator.allocate

        def allocate(views):
            out = inner(views)
            check(views, out)
            return out
        allocator.allocate = allocate
    return simulate_elastic(seen, jobs, _apps(), ctx.timer_for(seen), allocator)


def test_fifo_in_the_elastic_loop_starts_jobs_in_arrival_order():
    cluster = ElasticCluster.of("two-types", [_pool("a100", 1, 2, 8), _pool("t4", 1, 2, 8)])
    jobs = read_jobs(PHILLY, "both", 30)
    result = _run(cluster, "fifo", jobs)
    starts = {j.spec.job_id: j.gpu_rounds[0][0] for j in result.jobs}
    order = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    waited = [starts[j.job_id] - j.arrival for j in order]
    assert max(waited) > 60, "the cluster should make some job queue, or the order is not tested"
    for earlier, later in zip(order, order[1:]):
        assert starts[earlier.job_id] <= starts[later.job_id], (earlier.job_id, later.job_id)


@pytest.mark.parametrize("policy", RIGID_IN_ELASTIC)
def test_rigid_policies_never_exceed_the_pools_and_run_jobs_whole(policy):
    rng = np.random.default_rng(sum(map(ord, policy)))
    cluster = ElasticCluster.of("two-types", [_pool("a100", 2, 2, 8), _pool("t4", 2, 2, 8)])
    all_jobs = read_jobs(PHILLY, "both", 60)
    picked = sorted(rng.choice(len(all_jobs), size=24, replace=False))
    # a random subset, arrivals compressed 4x so that the 64 GPUs are contended
    jobs = [ElasticJobSpec(all_jobs[i].job_id, all_jobs[i].arrival / 4, all_jobs[i].app, all_jobs[i].gpus,
                           all_jobs[i].batch) for i in picked]
    capacity = np.array(cluster.capacity)
    rounds = []

    def check(views, out):
        total = sum(out.values())
        assert np.all(total <= capacity), total
        for view in views:
            assert int(out[view.job_id].sum()) in (0, view.gpus_wanted), (view.job_id, out[view.job_id])
        rounds.append(int(total.sum()))

    params = {"machine_timer_s": 600.0, "rack_timer_s": 600.0} if policy == "dally-manual" else {}
    result = _run(cluster, policy, jobs, params, check)
    assert len(result.jobs) == len(jobs) and all(j.finish is not None for j in result.jobs)
    assert max(rounds) > capacity.sum() // 2, "the cluster was never busy: the bound is not tested"
