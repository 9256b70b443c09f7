"""The rigid simulator's policies (FIFO, Gandiva, Dally and its variants) in the elastic loop, through
artist/policies/rigid_in_elastic.py: their decisions against hand-worked expectations, and the loop's
capacity never exceeded."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest

from artist.elastic.applications import heterogeneous_applications
from artist.elastic.cluster import ElasticCluster, Pool, load_cluster
from artist.elastic.hetero_runs import RunContext, read_jobs
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobSpec
from artist.policies.pollux.registry import RIGID_IN_ELASTIC, make_elastic_policy
from artist.cluster import FreeMap
from artist.elastic.jobs import ElasticJobs
from artist.placement import Placement
from artist.policies.base import SchedulerView
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


@dataclass
class _Record:
    """What the loop keeps of a job and the policy reads: its id, arrival, GPUs held (None: it waits) and
    its elastic job (what its agent reports)."""
    job_id: str
    arrival: float
    placement: Placement | None
    elastic: object


def _round(name: str, params: dict, cluster, specs, rounds):
    """The policy over these jobs at a sequence of rounds, each (now, {job: GPUs per node it holds, or
    None: it waits, absent: not in the system; optionally (per node, attained GPU-seconds)}): per round,
    the GPUs per node the policy gives each job it places. The loop's records are made here, so each
    round's holdings are the test's, as the loop would pass them."""
    policy, _ = make_elastic_policy(name, params, cluster, 0, _context(cluster, specs))
    layout = cluster.layout()
    jobs = ElasticJobs(cluster.capacity, cluster.node_types, specs, _apps(), None)
    policy.bound(jobs, 60.0)
    admitted = {spec.job_id: jobs.admit(spec) for spec in specs}
    by_id = {spec.job_id: spec for spec in specs}
    out = []
    for now, holdings in rounds:
        free = FreeMap.without(layout.topology, layout.absent)
        waiting, running = [], []
        for job_id, held in holdings.items():
            job = admitted[job_id]
            held, job.attained = held if isinstance(held, tuple) else (held, job.attained)
            placement = None
            if held is not None:
                gpus = [g for node, n in enumerate(held) if n for g in layout.free_gpus(free, node, n)]
                free.take(gpus)
                placement = Placement(layout.topology, tuple(gpus))
                job.alloc = np.asarray(held, dtype=int)
            record = _Record(job_id, by_id[job_id].arrival, placement, job)
            (running if placement is not None else waiting).append(record)
        view = SchedulerView(now, layout.topology, waiting, running, free, None, 0.0, is_round=True)
        decision = policy.schedule(view)
        out.append({j: layout.per_node(p.gpus).tolist() for j, p in decision.allocations.items()})
    return out


def test_dally_on_an_empty_two_rack_pool_takes_one_machine_then_one_rack():
    cluster = ElasticCluster.of("two-racks", [_pool("t4", 2, 2, 4)])  # nodes 0, 1: rack 0; nodes 2, 3: rack 1
    small = ElasticJobSpec("small", 0.0, "cifar10", gpus=4, batch=512)
    big = ElasticJobSpec("big", 0.0, "cifar10", gpus=8, batch=1024)
    for name in ("dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated"):
        assert _round(name, {}, cluster, [small], [(0.0, {"small": None})])[0]["small"] == [4, 0, 0, 0], name
        got = _round(name, {}, cluster, [big], [(0.0, {"big": None})])[0]["big"]
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
    rounds = [(now, {"a": ([2, 0, 0, 0], 2 * now), "b": ([0, 0, 2, 0], 2 * now),
                     **({"c": None} if now >= c.arrival else {})}) for now in np.arange(0.0, 601.0, 60.0)]
    for name, start in expected.items():
        params = {"machine_timer_s": 1000.0, "rack_timer_s": 190.0} if name == "dally-manual" else {}
        started = None
        for (now, _), got in zip(rounds, _round(name, params, cluster, [a, b, c], rounds)):
            assert got["a"] == [2, 0, 0, 0] and got["b"] == [0, 0, 2, 0], (name, now)
            if "c" in got:
                assert got["c"] == [0, 2, 0, 2], (name, got["c"])
                started = now
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
        first, second = _round("gandiva", {"migrate": migrate}, cluster, [a, b],
                               [(0.0, {"a": [2, 0, 0, 0], "b": None}), (60.0, {"b": ([0, 2, 2, 0], 240.0)})])
        assert first["b"] == [0, 2, 2, 0]
        assert second["b"] == after, migrate


@pytest.mark.parametrize("policy", ["fifo", "gandiva", "dally"])
def test_on_machines_of_several_shapes_a_rigid_policy_holds_only_gpus_that_exist(policy):
    """Sia's 64-GPU cluster (6 x 4 T4, 3 x 8 RTX, 2 x 8 A100) as one fabric of 8-GPU slots: the policy's
    placements never use a T4 slot's missing GPUs or a short rack's missing machines, no node ever holds
    more than it has, and every job ends."""
    cluster = load_cluster(TOPOLOGIES_DIR / "clusters" / "sia-hetero-64.yaml")
    capacity = np.array(cluster.capacity)
    jobs = [ElasticJobSpec(j.job_id, j.arrival / 8, j.app, j.gpus, j.batch) for j in read_jobs(PHILLY, "both", 24)]
    seen = []

    def check(specs, out):
        total = sum(out.values(), np.zeros(len(capacity), dtype=int))
        assert np.all(total <= capacity), total
        seen.append(int(total.sum()))

    result = _run(cluster, policy, jobs, None, check)
    assert all(j.finish is not None for j in result.jobs)
    assert max(seen) > 24, "the cluster was never loaded: the bound is not tested"
    allocator, _ = make_elastic_policy(policy, {}, cluster, 0, None)
    absent = set(cluster.layout().absent)
    free = [g for machine in allocator.free_map([]).free_by_machine for g in machine]
    assert len(free) == 64 and not absent.intersection(free)


def _run(cluster, policy: str, jobs, params=None, check=None):
    """A run of the policy over the jobs; check(specs by id, {job: GPUs per node}) sees every round's
    decision."""
    ctx = RunContext(_apps(), list(jobs), _models())
    allocator, seen = make_elastic_policy(policy, params or {}, cluster, 0, ctx.policy_context(cluster))
    if check is not None:
        inner, layout, specs = allocator.schedule, seen.layout(), {j.job_id: j for j in jobs}

        def schedule(view):
            decision = inner(view)
            if view.is_round:
                check(specs, {j: layout.per_node(p.gpus) for j, p in decision.allocations.items()})
            return decision
        allocator.schedule = schedule
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

    def check(specs, out):
        total = sum(out.values(), np.zeros(len(capacity), dtype=int))
        assert np.all(total <= capacity), total
        for job_id, per_node in out.items():
            assert int(per_node.sum()) == specs[job_id].gpus, (job_id, per_node)
        rounds.append(int(total.sum()))

    params = {"machine_timer_s": 600.0, "rack_timer_s": 600.0} if policy == "dally-manual" else {}
    result = _run(cluster, policy, jobs, params, check)
    assert len(result.jobs) == len(jobs) and all(j.finish is not None for j in result.jobs)
    assert max(rounds) > capacity.sum() // 2, "the cluster was never busy: the bound is not tested"
