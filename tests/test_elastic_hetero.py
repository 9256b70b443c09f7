"""The elastic loop on several GPU types: cluster files, the pooled step timer (measured compute per type,
ArtISt's network on the type's own links), the dominant-type rule, and Sia's profiling charge by hand."""

import csv
import statistics

import numpy as np
import pytest

from artist.elastic.applications import SIA_DIR, heterogeneous_applications
from artist.elastic.cluster import CLUSTERS_DIR, PooledStepTimer, load_cluster
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import PROFILE_BATCHES, PROFILE_ITERATIONS, ElasticJobs, ElasticJobSpec
from artist.errors import InputError
from artist.shipped import TOPOLOGIES_DIR
from artist.workload import load_models
from artist.workload.traces.pollux import APPLICATIONS

SIA64 = CLUSTERS_DIR / "sia-hetero-64.yaml"


@pytest.fixture(scope="module")
def cluster():
    return load_cluster(SIA64)


@pytest.fixture(scope="module")
def timer(cluster):
    apps = heterogeneous_applications()
    models = load_models()
    return PooledStepTimer(cluster, {k: a for k, (a, _) in apps.items()}, {k: models[APPLICATIONS[k][0]] for k in apps})


def test_sia_mix_is_6_t4_3_rtx_2_a100_nodes(cluster):
    assert cluster.gpus == 64
    counts = {t: sum(c for c, x in zip(cluster.capacity, cluster.node_types) if x == t) for t in cluster.gpu_types}
    assert counts == {"t4": 24, "rtx": 24, "a100": 16}
    assert cluster.capacity == [4] * 6 + [8] * 5
    seen = cluster.virtual(4)   # Pollux's view in Sia's artifact: 8-GPU machines as two 4-GPU nodes
    assert seen.capacity == [4] * 16 and seen.gpus == 64
    assert [(n.pool, n.machine) for n in seen.nodes[6:8]] == [(1, 0), (1, 0)]
    hetero = load_cluster(CLUSTERS_DIR / "dally-hetero.yaml")
    assert hetero.gpus == 2 * 64 + 2 * 64 + 2 * 64 and set(hetero.gpu_types) == {"a100", "rtx", "t4"}
    assert load_cluster(TOPOLOGIES_DIR / "pollux-t4.yaml", "t4").capacity == [4] * 16


@pytest.mark.parametrize("text, field", [
    ("name: x\npools: []\n", "pools"),
    ("name: x\npools:\n  - {gpu_type: t4, topology: no-such-file}\n", "pools.0.topology"),
    ("name: x\npools:\n  - {gpu_type: t4, topology: pollux-t4, speed: 2}\n", "pools.0."),
    ("name: x\npools:\n  - {gpu_type: t4, topology: pollux-t4}\n  - {gpu_type: t4, topology: pollux-t4}\n", "pools"),
    ("name: x\nextra: 1\npools:\n  - {gpu_type: t4, topology: pollux-t4}\n", "extra"),
    ("name: x\npools:\n  - {gpu_type: t4, topology: pollux-t4, memory_gib: 0}\n", "pools.0.memory_gib"),
    ("name: x\npools:\n  - {gpu_type: t4, topology: pollux-t4, memory_gib: 1.0e9}\n", "pools.0.memory_gib"),
    ("name: x\npools:\n  - {gpu_type: t4, topology: pollux-t4, memory_gib: lots}\n", "pools.0.memory_gib"),
])
def test_bad_cluster_files_name_the_file_and_field(tmp_path, text, field):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_cluster(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_a_topology_file_is_a_pool_per_gpu_type_of_its_racks():
    assert [(p.gpu_type, p.topology.gpus) for p in load_cluster(TOPOLOGIES_DIR / "pollux-t4.yaml").pools] == [
        ("T4", 64)]
    assert load_cluster(TOPOLOGIES_DIR / "pollux-t4.yaml", "t4").gpu_types == ["t4"]  # the type the caller names
    # racks alternate A100, V100 (rack_gpu_types cycled): one pool of each type's racks, the same machines
    mixed = load_cluster(TOPOLOGIES_DIR / "hetero-a100-v100.yaml")
    assert [(p.gpu_type, p.topology.racks, p.topology.machines_per_rack, p.topology.gpus_per_machine)
            for p in mixed.pools] == [("A100", 1, 8, 8), ("V100", 1, 8, 8)]
    assert mixed.gpus == 128 and mixed.node_types == ["A100"] * 8 + ["V100"] * 8


def _compute(app, suffix, batch):
    with open(SIA_DIR / app / f"placements-{suffix}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return statistics.median(float(r["step_time"]) - float(r["sync_time"])
                             for r in rows if int(r["local_bsz"]) == batch)


def test_compute_is_the_types_measured_table_and_sync_the_types_links(cluster, timer):
    n = len(cluster.nodes)
    one_rtx = [0] * n
    one_rtx[6] = 1
    assert timer.seconds("cifar10", "rtx", one_rtx, 32, 0)[0] == pytest.approx(_compute("cifar10", "rtx", 32))
    assert timer.seconds("cifar10", "rtx", one_rtx, 32, 2)[0] == pytest.approx(3 * _compute("cifar10", "rtx", 32))

    def alloc(counts):   # GPUs per node of the full cluster vector
        row = [0] * n
        for node, c in counts.items():
            row[node] = c
        return row
    # imagenet 8 GPUs: one DGX (NVSwitch) < two DGXs over 200 Gb/s per GPU < two rtx nodes over 50 Gb/s Ethernet
    m = 64
    a100_one = timer.seconds("imagenet", "a100", alloc({9: 8}), m, 0)[0]
    a100_two = timer.seconds("imagenet", "a100", alloc({9: 4, 10: 4}), m, 0)[0]
    assert a100_one < a100_two
    c_rtx = float(timer.apps["imagenet"].compute["rtx"](m))
    c_a100 = float(timer.apps["imagenet"].compute["a100"](m))
    rtx_two = timer.seconds("imagenet", "rtx", alloc({6: 4, 7: 4}), m, 0)[0]
    assert rtx_two - c_rtx > a100_two - c_a100   # more exposed sync on the slower NIC
    # symmetric placements share an answer; a short list is GPUs per machine of the type's pool
    assert timer.seconds("imagenet", "a100", alloc({10: 8}), m, 0) == timer.seconds("imagenet", "a100", [8], m, 0)
    # a mixed allocation collapsed to t4: t4's compute, its rtx GPUs as an extra t4 machine in another rack
    # (across the pool's spine tier: at least the time of two t4 machines in one rack)
    mixed = timer.seconds("cifar10", "t4", alloc({0: 4, 6: 4}), 64, 0)
    same_rack = timer.seconds("cifar10", "t4", [4, 4], 64, 0)
    assert mixed[1] == same_rack[1] and mixed[0] >= same_rack[0] > timer.seconds("cifar10", "t4", [4], 64, 0)[0]


def test_a_mixed_allocation_runs_on_its_dominant_type_ties_to_the_faster(cluster, timer):
    apps = heterogeneous_applications()
    jobs = ElasticJobs(cluster.capacity, cluster.node_types, [], apps, timer)
    row = np.zeros(len(cluster.capacity), dtype=int)
    row[0], row[6] = 4, 4
    assert jobs.type_of(row) == "rtx"          # 4 t4 + 4 rtx: tie, rtx is faster (a100 > quad > rtx > t4)
    row[1] = 4
    assert jobs.type_of(row) == "t4"           # 8 t4 + 4 rtx
    row[:] = 0
    row[9] = 1
    assert jobs.type_of(row) == "a100"


def test_profiling_is_charged_as_ten_one_gpu_batches_per_type(cluster, timer):
    apps = heterogeneous_applications()
    spec = ElasticJobSpec("j", 0.0, "cifar10")
    job = ElasticJobs(cluster.capacity, cluster.node_types, [spec], apps, timer, profiling=True).admit(spec)
    expected = 0.0
    for t in cluster.gpu_types:
        limit = apps["cifar10"][1].limit(t)
        batches = np.unique(np.round(np.geomspace(limit.min_local, limit.max_local, PROFILE_BATCHES)).astype(int))
        assert sorted(job.profile[t]) == batches.tolist() and len(batches) <= PROFILE_BATCHES
        expected += PROFILE_ITERATIONS * sum(float(apps["cifar10"][0].compute[t](int(m))) for m in batches)
        assert job.agents[t].most_gpus == 1 and job.agents[t].params is not None
    assert job.profile_gpu_seconds == pytest.approx(expected)


def test_workload_rows_are_checked(tmp_path):
    from artist.elastic.hetero_runs import read_jobs
    path = tmp_path / "w.csv"
    path.write_text("name,time,application,num_replicas,batch_size\na,0,cifar10,2,128\nb,x,cifar10,2,128\n")
    with pytest.raises(InputError, match="line 3"):
        read_jobs(path, "none")
    path.write_text("name,time,application\na,0,cifar10\n")
    with pytest.raises(InputError, match="columns"):
        read_jobs(path, "none")
    path.write_text("name,time,application,num_replicas,batch_size\na,5,cifar10,2,128\n")
    assert read_jobs(path, "both")[0] == ElasticJobSpec("a", 5.0, "cifar10", gpus=2, batch=128)
    assert read_jobs(path, "none")[0] == ElasticJobSpec("a", 5.0, "cifar10")


def test_a_mixed_allocation_is_run_on_its_dominant_type_in_the_loop(cluster, timer):
    """An allocator that gives 4 t4 + 4 rtx GPUs (as Pollux may on the mixed cluster): the job (a fixed batch,
    so no refits slow the test) runs on rtx (the tie goes to the faster type), with rtx's agent and compute,
    and finishes its measured epochs."""
    from artist.elastic.hetero_runs import POLICIES, RunContext

    class Mixed:
        def allocate(self, jobs):
            row = np.zeros(len(cluster.capacity), dtype=int)
            row[0], row[6] = 4, 4
            return {j.job_id: row.copy() for j in jobs}
    apps = {"cifar10": heterogeneous_applications()["cifar10"]}
    job = ElasticJobSpec("c", 0.0, "cifar10", batch=512)
    job = simulate_elastic(cluster, [job], apps, timer, Mixed()).jobs[0]
    assert job.gpu_type == "rtx" and job.agent is job.agents["rtx"] and job.agents["t4"].most_gpus == 0
    assert job.agents["rtx"].most_gpus == 8
    assert job.progress.progress == pytest.approx(job.app.replay.total_progress)
    pollux, seen = POLICIES["pollux"].build(cluster, 0, RunContext({}, []), pop_size=4, generations=2)
    assert list(pollux.capacity) == [4] * 16 and seen.gpus == 64   # Pollux sees 4-GPU nodes (Sia's artifact)


# Per pool, facts from the sources the cluster files cite (bytes/s per GPU port, per direction).
PCIE3_X16 = 8e9 * 16 * 128 / 130 / 8          # 8 GT/s x 16 lanes, 128b/130b
CLUSTER_FACTS = {
    "sia-hetero-64": {   # Sia section 5 + draft section 4; artifact simulator_config.py
        "t4": dict(machines=6, gpus_per_machine=4, machine_Bps=PCIE3_X16, rack_Bps=50e9 / 4 / 8),
        "rtx": dict(machines=3, gpus_per_machine=8, machine_Bps=PCIE3_X16, rack_Bps=50e9 / 8 / 8),
        "a100": dict(machines=2, gpus_per_machine=8, machine_Bps=600e9 / 2, rack_Bps=1.6e12 / 8 / 8),
    },
    "dally-hetero": {    # Dally's DGX A100 racks; PCIe servers on Dally's spine (ours)
        "a100": dict(machines=16, gpus_per_machine=8, machine_Bps=600e9 / 2, rack_Bps=400e9 / 8),
        "rtx": dict(machines=16, gpus_per_machine=8, machine_Bps=PCIE3_X16, rack_Bps=100e9 / 8 / 8),
        "t4": dict(machines=32, gpus_per_machine=4, machine_Bps=PCIE3_X16, rack_Bps=50e9 / 4 / 8),
    },
    # Crius Table 1 / sec. 8.1 machine counts; NICs as the pool files choose them (ConnectX-5 100 Gb/s, A10's
    # ConnectX-6 200 Gb/s, one per server split over its GPUs; V100 8 x 100 Gb/s as a DGX-2), NVLink 3 on
    # A100 (300 GB/s a direction), NVLink 2 on V100 (150 GB/s), PCIe 4.0 x16 on A40 / A10 (200 Gb/s chosen)
    "crius-1280": {
        "A100": dict(machines=80, gpus_per_machine=4, machine_Bps=300e9, rack_Bps=100e9 / 4 / 8),
        "A40": dict(machines=160, gpus_per_machine=2, machine_Bps=200e9 / 8, rack_Bps=100e9 / 2 / 8),
        "A10": dict(machines=160, gpus_per_machine=2, machine_Bps=200e9 / 8, rack_Bps=200e9 / 2 / 8),
        "V100": dict(machines=20, gpus_per_machine=16, machine_Bps=150e9, rack_Bps=8 * 100e9 / 16 / 8),
    },
    "crius-testbed": {
        "A40": dict(machines=16, gpus_per_machine=2, machine_Bps=200e9 / 8, rack_Bps=100e9 / 2 / 8),
        "A10": dict(machines=16, gpus_per_machine=2, machine_Bps=200e9 / 8, rack_Bps=200e9 / 2 / 8),
    },
    "dally-hetero-congested": {   # dally-hetero's machine types at 3 x 1 x 8; t4 as g4dn.metal (100 Gb/s, 8 x T4)
        "a100": dict(machines=3, gpus_per_machine=8, machine_Bps=600e9 / 2, rack_Bps=400e9 / 8),
        "rtx": dict(machines=3, gpus_per_machine=8, machine_Bps=PCIE3_X16, rack_Bps=100e9 / 8 / 8),
        "t4": dict(machines=3, gpus_per_machine=8, machine_Bps=PCIE3_X16, rack_Bps=100e9 / 8 / 8),
    },
}


@pytest.mark.parametrize("name", sorted(CLUSTER_FACTS))
def test_cluster_files_match_their_sources(name):
    cl = load_cluster(CLUSTERS_DIR / f"{name}.yaml")
    assert sorted(p.stem for p in CLUSTERS_DIR.glob("*.yaml")) == sorted(CLUSTER_FACTS)
    for pool in cl.pools:
        facts, topo = CLUSTER_FACTS[name][pool.gpu_type], pool.topology
        assert topo.machines == facts["machines"] and topo.gpus_per_machine == facts["gpus_per_machine"]
        assert topo.machine.bytes_per_second == pytest.approx(facts["machine_Bps"])
        assert topo.rack.bytes_per_second == pytest.approx(facts["rack_Bps"])
        assert topo.source and all(t.source for t in (topo.machine, topo.rack, topo.spine))
