"""Elastic jobs in the exact event loop (artist/elastic/exact.py, artist/elastic/allocators.py): hand-computed
times for a lone job with a restart, decisions only at rounds, every kind of allocator to the end with the
same bits twice, and the GPU map of a cluster of several machine shapes.

(Until 2026-11-28 elastic jobs had a loop of their own, 60 s rounds; this loop gave the same bits as it for
Pollux, Optimus+Oracle, Tiresias, Gavel, FIFO and Dally on this file's workload, and on the reduced Pollux,
Sia and all-policies sweeps; CHANGELOG.md.)"""

import dataclasses

import numpy as np
import pytest
from elastic_helpers import csv_rows, measured_compute, t4_step_timer

from artist.elastic.applications import POLLUX_DIR, pollux_applications
from artist.elastic.cluster import ElasticCluster, Pool
from artist.elastic.exact import ElasticWorkload, run_in_exact_loop
from artist.elastic.jobs import ElasticJobs, ElasticJobSpec
from artist.elastic.spec import ElasticSpec
from artist.network.analytical import AnalyticalModel
from artist.policies.pollux.baselines import OptimusOracle, TiresiasRigid
from artist.policies.pollux.registry import PolicyContext, make_elastic_policy
from artist.policies.pollux.scheduler import PolluxScheduler
from artist.shipped import TOPOLOGIES_DIR
from artist.simulator import SimulationError, Simulator, SimulatorConfig
from artist.topology import load_topology


@pytest.fixture(scope="module")
def timer():
    return t4_step_timer()


@pytest.fixture(scope="module")
def topology():
    return load_topology(TOPOLOGIES_DIR / "pollux-t4.yaml")


def _layout(topology):
    return ElasticCluster.of(topology.name, [Pool("t4", topology)]).layout()


def _workload(kind: str):
    """8 jobs of the six applications arriving over 30 minutes (not on round boundaries): elastic for
    Pollux, a fixed batch for Optimus+Oracle, fixed GPUs and batch for the rigid ones."""
    apps = pollux_applications()
    names = sorted(apps)
    rng = np.random.default_rng(7)
    jobs = []
    for i in range(8):
        app, gpus = names[i % len(names)], (1, 2, 4, 8)[i % 4]
        spec = ElasticJobSpec(f"j{i:02d}", float(rng.integers(0, 1800)), app)
        if kind != "elastic":
            spec = dataclasses.replace(spec, gpus=gpus if kind == "rigid" else 0,
                                       batch=apps[app][1].initial_batch * gpus)
        jobs.append(spec)
    return apps, jobs


def _allocator(name: str, topology, timer, jobs, apps):
    cap = [topology.gpus_per_machine] * topology.machines
    if name == "pollux":
        return PolluxScheduler(cap, pop_size=6, generations=3, seed=0)
    if name == "optimus-oracle":
        return OptimusOracle(cap)
    if name == "tiresias-pollux":
        return TiresiasRigid(cap)
    cluster = ElasticCluster.of(topology.name, [Pool("t4", topology)])
    context = PolicyContext(apps, list(jobs), lambda _cluster: timer, timer.profiles)  # Tiresias reads their skew
    return make_elastic_policy(name, {}, cluster, 0, context)[0]


class Script:
    """Gives job j GPUs per node by round: the allocation of the latest round listed at or before now."""

    def __init__(self, plan):
        self.plan, self.calls = plan, []

    def allocate(self, views):
        now = views[0].submitted + views[0].age
        self.calls.append(now)
        return {v.job_id: np.array(max((t, a) for t, a in self.plan[v.job_id] if t <= now)[1]) for v in views}


def _fixed_cifar(batch: int):
    app, spec = pollux_applications()["cifar10"]
    return {"cifar10": (app, ElasticSpec(initial_batch=128, max_batch=4096, local_batch=spec.local_batch,
                                         fixed_batch=batch, restart_seconds=spec.restart_seconds))}


def _total_progress():
    tables = [csv_rows(p) for p in sorted((POLLUX_DIR / "cifar10").glob("validation-*.csv"))]
    return min(float(t[-1]["progress"]) for t in tables)


KINDS = {"pollux": "elastic", "optimus-oracle": "batch", "tiresias-pollux": "rigid", "gavel": "rigid", "fifo": "rigid",
         "tiresias": "rigid", "dally": "rigid"}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_of_allocator_runs_its_jobs_to_the_end_within_capacity_with_the_same_bits_twice(name, timer,
                                                                                                  topology):
    apps, jobs = _workload(KINDS[name])
    if name == "pollux":  # its search and refits every round: the two shortest applications' jobs only
        jobs = [j for j in jobs if j.app in ("cifar10", "ncf")]
    cap = [topology.gpus_per_machine] * topology.machines
    runs = []
    for _ in range(2):
        allocator = _allocator(name, topology, timer, jobs, apps)
        seconds = float(getattr(allocator, "round_seconds", 60.0))
        runs.append(run_in_exact_loop(_layout(topology), ElasticJobs(cap, "t4", jobs, apps, timer), jobs, allocator,
                                      seconds))
    first, second = runs
    held: dict[float, int] = {}
    for job in first.jobs:
        assert job.progress.progress == pytest.approx(job.app.replay.total_progress)
        assert job.finish >= job.spec.arrival and job.attained > 0
        assert len(job.round_progress) == len(job.gpu_rounds)  # every round it held GPUs is closed
        assert sum(job.round_progress) == pytest.approx(job.progress.progress)  # progress is conserved
        for t, gpus, *_ in job.gpu_rounds:
            held[t] = held.get(t, 0) + gpus
    assert max(held.values()) <= sum(cap)
    assert first.rounds == second.rounds and first.makespan == second.makespan
    for a, b in zip(first.jobs, second.jobs):
        assert (a.finish, a.attained, a.progress.restarts, a.gpu_rounds, a.round_progress) == \
            (b.finish, b.attained, b.progress.restarts, b.gpu_rounds, b.round_progress)


def test_a_lone_job_resized_once_pays_one_restart_and_runs_at_each_allocations_rate(timer, topology):
    """cifar10 at its fixed batch M0 = 128 (gain 1 per step). It arrives at 30 s, starts at the 60 s round
    on 1 GPU, moves to 2 GPUs of one machine at 120 s (restart delay R, 64 per GPU), and ends when its
    progress is done: finish = 120 + R + (P - 60 / t1) x t2 with t1, t2 its iteration times there."""
    apps = _fixed_cifar(128)
    job = ElasticJobSpec("j", 30.0, "cifar10")
    nodes = topology.machines
    one, two = np.zeros(nodes, int), np.zeros(nodes, int)
    one[0], two[0] = 1, 2
    script = Script({"j": [(0.0, one), (120.0, two)]})
    result = run_in_exact_loop(_layout(topology), ElasticJobs([4] * nodes, "t4", [job], apps, timer), [job], script)
    c91, c129 = measured_compute("cifar10", 91), measured_compute("cifar10", 129)
    t1 = c91 + 37 / 38 * (c129 - c91)  # 128 is between the measured local batches 91 and 129
    t2 = timer.seconds("cifar10", "t4", two, 64, 0)[0]
    restart = apps["cifar10"][1].restart_seconds
    done = result.jobs[0]
    assert done.finish == pytest.approx(120 + restart + (_total_progress() - 60 / t1) * t2, rel=1e-9)
    assert done.progress.restarts == 1
    assert script.calls[:3] == [60.0, 120.0, 180.0]  # asked at rounds only, never at the arrival (30 s)
    # it held 1 GPU for 60 s, then 2 GPUs until the end (the restart included)
    assert done.attained == pytest.approx(60 + 2 * (done.finish - 120), rel=1e-12)
    # at M0 every step is worth one: P iterations, of which those on 2 GPUs expose t2 less their compute
    assert done.iterations == pytest.approx(_total_progress(), rel=1e-12)
    c64 = timer.seconds("cifar10", "t4", two, 64, 0)[1]
    exposed = (_total_progress() - 60 / t1) * (t2 - c64)
    assert t2 > c64 and done.comm_seconds_per_iteration == pytest.approx(exposed / _total_progress(), rel=1e-9)


def test_elastic_jobs_are_refused_with_shared_contention_and_a_layout_of_other_nodes(timer, topology):
    from artist.elastic.allocators import RoundAllocatorPolicy

    apps = pollux_applications()
    jobs = [ElasticJobSpec("a", 0.0, "cifar10")]
    layout = _layout(topology)
    workload = ElasticWorkload(ElasticJobs([4] * topology.machines, "t4", jobs, apps, timer), jobs, layout)
    adapter = RoundAllocatorPolicy(OptimusOracle([4] * topology.machines), workload.jobs, layout)
    fabric = AnalyticalModel(topology)
    with pytest.raises(SimulationError, match="shared"):
        Simulator(topology, [], {}, adapter, fabric, SimulatorConfig(contention="shared"), managed=workload)
    halves = ElasticWorkload(ElasticJobs([2] * (2 * topology.machines), "t4", jobs, apps, timer), jobs, layout)
    with pytest.raises(SimulationError, match="its layout"):
        Simulator(topology, [], {}, adapter, fabric, managed=halves)


def test_a_cluster_of_several_machine_shapes_lays_its_nodes_on_one_gpu_map():
    """Sia's 64-GPU cluster: 6 x 4 T4, 3 x 8 RTX, 2 x 8 A100 (one rack each) on one map of 3 racks of 6
    slots of 8 GPUs; Pollux's 4-GPU virtual nodes split the 8-GPU machines in halves."""
    from artist.elastic.cluster import load_cluster

    cluster = load_cluster(TOPOLOGIES_DIR / "clusters" / "sia-hetero-64.yaml")
    layout = cluster.layout()
    topo = layout.topology
    assert (topo.racks, topo.machines_per_rack, topo.gpus_per_machine) == (3, 6, 8)
    assert layout.capacity == cluster.capacity and sum(layout.capacity) == 64
    assert layout.node_gpus[0] == (0, 1, 2, 3) and layout.node_gpus[5] == (40, 41, 42, 43)  # T4: 4 of 8 slots
    assert layout.node_gpus[6] == tuple(range(48, 56))  # the first RTX machine: rack 1, slot 0
    assert layout.node_gpus[9] == tuple(range(96, 104))  # the first A100 machine: rack 2, slot 0
    assert len(layout.absent) == topo.gpus - 64
    assert all(topo.rack_of(g) == {"t4": 0, "rtx": 1, "a100": 2}[t]
               for gpus, t in zip(layout.node_gpus, cluster.node_types) for g in gpus)
    virtual = cluster.virtual(4).layout()
    assert virtual.capacity == [4] * 16 and virtual.node_gpus[6] == (48, 49, 50, 51)
    assert virtual.node_gpus[7] == (52, 53, 54, 55)
    assert virtual.per_node([48, 53, 54, 96]).tolist() == [0] * 6 + [1, 2] + [0] * 4 + [1] + [0] * 3  # A100: 12-15


def test_an_allocator_that_never_places_a_job_stops_the_run_with_one_message(timer, topology):
    """Nothing runs, nothing else is to come, and the allocator was asked at a round: the loop says so
    (the round loop it replaced went round by round until a million rounds)."""
    class Never:
        def allocate(self, views):
            return {v.job_id: np.zeros(topology.machines, int) for v in views}

    apps = pollux_applications()
    jobs = [ElasticJobSpec("a", 10.0, "cifar10")]
    with pytest.raises(SimulationError, match="stalled .* 1 job"):
        run_in_exact_loop(_layout(topology), ElasticJobs([4] * topology.machines, "t4", jobs, apps, timer), jobs,
                          Never())
