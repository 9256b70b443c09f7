"""The analytical model against hand-computed α-β times."""

from pathlib import Path

import pytest

from artist.network.analytical import AnalyticalModel, StartupLatency, schedule_seconds
from artist.network.collectives import allreduce_schedule
from artist.placement import Placement, placement_from_shape
from artist.parallel.ddp import ddp_step
from artist.parallel.graph import Node, StepGraph, schedule_graph
from artist.perf.model import as_perf_model
from artist.workload import ModelProfile

from conftest import (MACHINE_LINK_US, MACHINE_SWITCH_US, NIC_GBPS, NVSWITCH_GBPS, RACK_LINK_US, RACK_SWITCH_US,
                      SPINE_LINK_US, SPINE_SWITCH_US)

REPO = Path(__file__).resolve().parent.parent
S = 100_000_000  # bytes
NCCL = StartupLatency()  # 8.4 µs base, 3.4 µs NVLink step, 14 µs NET step (NCCL tuning.cc)
BASE, NV_STEP, NET_STEP = 8.4e-6, 3.4e-6, 14.0e-6


def test_startup_latency_defaults_are_nccl_ring_simple_figures():
    assert (NCCL.base_s, NCCL.nvlink_step_s, NCCL.net_step_s) == (BASE, NV_STEP, NET_STEP)


def test_ring_8_gpus_one_machine_matches_hand_computed(topo_8gpu_machines):
    n = 8
    nv_bytes_per_s = NVSWITCH_GBPS * 1e9 / 8
    path_latency = (2 * MACHINE_LINK_US + MACHINE_SWITCH_US) * 1e-6
    expected = BASE + 2 * (n - 1) * (NV_STEP + path_latency + S / n / nv_bytes_per_s)
    placement = placement_from_shape(topo_8gpu_machines, [[8]])
    assert AnalyticalModel(topo_8gpu_machines).collective_seconds(placement, S) == pytest.approx(expected, rel=1e-9)


NV_PATH = (2 * MACHINE_LINK_US + MACHINE_SWITCH_US) * 1e-6


def test_ring_16_gpus_two_machines_bottlenecked_by_the_nic(topo_8gpu_machines):
    # 16 ranks, machine-contiguous ring: each step two transfers leave a machine over
    # a 50 GB/s NIC carrying S/16, the others ride 300 GB/s NVSwitch links, so every
    # one of the 30 steps drains S/16 through a NIC. Latency: one chunk's path of 30
    # consecutive ring hops crosses the two machine boundaries (8 hops apart) at
    # most 4 times: 4 NIC hops + 26 NVLink hops.
    n = 16
    nic_bytes_per_s = NIC_GBPS * 1e9 / 8
    net_path = (2 * RACK_LINK_US + RACK_SWITCH_US) * 1e-6
    expected = BASE + 4 * (NET_STEP + net_path) + 26 * (NV_STEP + NV_PATH) + 2 * (n - 1) * S / n / nic_bytes_per_s
    placement = placement_from_shape(topo_8gpu_machines, [[8, 8]])
    assert placement.tier == "rack"
    assert AnalyticalModel(topo_8gpu_machines).collective_seconds(placement, S) == pytest.approx(expected, rel=1e-9)


def test_ring_across_racks_adds_spine_latency(topo_8gpu_machines):
    n = 16
    nic_bytes_per_s = NIC_GBPS * 1e9 / 8
    spine_path = (2 * RACK_LINK_US + 2 * SPINE_LINK_US + 2 * RACK_SWITCH_US + SPINE_SWITCH_US) * 1e-6
    expected = BASE + 4 * (NET_STEP + spine_path) + 26 * (NV_STEP + NV_PATH) + 2 * (n - 1) * S / n / nic_bytes_per_s
    placement = placement_from_shape(topo_8gpu_machines, [[8], [8]])
    assert placement.tier == "network"
    assert AnalyticalModel(topo_8gpu_machines).collective_seconds(placement, S) == pytest.approx(expected, rel=1e-9)


def test_oversubscribed_spine_becomes_the_bottleneck():
    from conftest import make_topology

    # 8 GPUs per rack x 50 GB/s NICs = 400 GB/s of NIC capacity; oversubscription 32
    # leaves a 12.5 GB/s uplink, which the two cross-rack transfers of each step share.
    topo = make_topology(gpus_per_machine=4, oversubscription=32.0)
    placement = placement_from_shape(topo, [[4], [4]])
    n, uplink = 8, 8 * 50e9 / 32
    spine_path = (2 * RACK_LINK_US + 2 * SPINE_LINK_US + 2 * RACK_SWITCH_US + SPINE_SWITCH_US) * 1e-6
    # each rack's uplink carries one transfer per direction per step; a chunk's 14
    # consecutive hops cross the two rack boundaries (4 hops apart) at most 4 times
    expected = BASE + 4 * (NET_STEP + spine_path) + 10 * (NV_STEP + NV_PATH) + 2 * (n - 1) * S / n / uplink
    assert AnalyticalModel(topo).collective_seconds(placement, S) == pytest.approx(expected, rel=1e-9)


def test_hierarchical_two_machines_of_four(topo_2x2x4):
    # intra reduce-scatter: 3 steps of S/4 over NVSwitch; inter ring of 2 machines on
    # each GPU's S/4 shard: 2 steps of S/8 over the NICs (4 NICs in parallel);
    # intra all-gather: 3 steps of S/4. Every hop of one step is of one kind, so the
    # latency chain is 6 NVLink hops + 2 NIC hops.
    nv, nic = NVSWITCH_GBPS * 1e9 / 8, NIC_GBPS * 1e9 / 8
    nv_path = (2 * MACHINE_LINK_US + MACHINE_SWITCH_US) * 1e-6
    net_path = (2 * RACK_LINK_US + RACK_SWITCH_US) * 1e-6
    intra = NV_STEP + nv_path + S / 4 / nv
    inter = NET_STEP + net_path + S / 8 / nic
    expected = BASE + 6 * intra + 2 * inter
    placement = placement_from_shape(topo_2x2x4, [[4, 4]])
    model = AnalyticalModel(topo_2x2x4, algorithm="hierarchical")
    assert model.collective_seconds(placement, S) == pytest.approx(expected, rel=1e-9)


def test_ring_latency_floor_of_2x8_is_near_nccl_measurement(topo_8gpu_machines):
    # gcp_a3mega_2node_16xH100_tcpxo.txt: all_reduce of 16 ranks on 2 nodes bottoms
    # out at ~123 µs for tiny sizes. NCCL's chunk-path latency model (~156 µs here,
    # with NCCL's default constants) stays within 1.5x of it; charging the NIC latency
    # on all 30 lock-step steps (~430 µs, 3.5x) would not.
    floor = AnalyticalModel(topo_8gpu_machines).collective_seconds(
        placement_from_shape(topo_8gpu_machines, [[8, 8]]), 8)
    assert 123e-6 / 1.5 < floor < 123e-6 * 1.5
    lock_step = BASE + 30 * NET_STEP
    assert lock_step > 3 * 123e-6


def test_linearised_model_equals_exact_schedule_timing(topo_2x2x4):
    model = AnalyticalModel(topo_2x2x4, channels=2)
    for shape in ([[4]], [[3, 1]], [[2], [1]], [[4, 4], [4, 4]], [[4, 2], [1]]):
        placement = placement_from_shape(topo_2x2x4, shape)
        for nbytes in (1, 1000, 12_345_679, 400_000_000):
            exact = schedule_seconds(allreduce_schedule("ring", placement, nbytes, 2), topo_2x2x4, NCCL)
            # the exact schedule splits bytes into integer chunks: at most one byte
            # per chunk more on the slowest (NIC) link in each step
            steps = 2 * (placement.size - 1)
            assert model.collective_seconds(placement, nbytes) == pytest.approx(exact, abs=steps * 8 / (NIC_GBPS * 1e9))


def test_one_gpu_has_no_communication(topo_2x2x4):
    model = ModelProfile("m", (1000, 2000), 0.5, "A100")
    estimate = as_perf_model(AnalyticalModel(topo_2x2x4), topo_2x2x4).estimate(
        model, placement_from_shape(topo_2x2x4, [[1]]))
    assert estimate.comm_seconds == 0 and estimate.exposed_comm_seconds == 0 and estimate.step_seconds == 0.5


def _overlap(bucket_seconds, ready_fractions, compute):
    """Exposed time of DDP buckets by the step graph: compute, a ready timer per bucket, buckets in a chain."""
    nodes = [Node(0, "compute", seconds=compute)]
    durations = [compute]
    previous = ()
    for seconds, ready in zip(bucket_seconds, ready_fractions):
        nodes.append(Node(len(nodes), "compute", seconds=ready * compute))
        durations.append(ready * compute)
        nodes.append(Node(len(nodes), "all_reduce", deps=(len(nodes) - 1,) + previous, group=(0, 1), nbytes=1))
        durations.append(seconds)
        previous = (len(nodes) - 1,)
    return schedule_graph(StepGraph(tuple(nodes)), durations).makespan - compute


def test_overlap_hand_computed():
    # compute 1.0 s; bucket A ready at 0.5 takes 0.3 (ends 0.8); bucket B ready at 0.7
    # waits for A, runs 0.8..1.2; exposed = 0.2.
    assert _overlap([0.3, 0.4], [0.5, 0.7], 1.0) == pytest.approx(0.2)
    # everything hidden
    assert _overlap([0.1, 0.1], [0.5, 0.7], 1.0) == 0.0
    # last bucket ready at the end: fully exposed
    assert _overlap([0.25], [1.0], 2.0) == pytest.approx(0.25)


def test_ddp_graph_is_compute_plus_ready_timers_and_a_bucket_chain(topo_8gpu_machines):
    model = ModelProfile("two", (S, S), 0.3, "A100", bucket_cap_bytes=S)
    placement = placement_from_shape(topo_8gpu_machines, [[8]])
    graph = ddp_step(model, placement, 0.3)
    kinds = [(n.kind, n.deps, n.nbytes) for n in graph.nodes]
    assert kinds == [("compute", (), 0), ("compute", (), 0), ("all_reduce", (1,), S),
                     ("compute", (), 0), ("all_reduce", (3, 2), S)]
    assert [n.seconds for n in graph.nodes if n.kind == "compute"] == [0.3, pytest.approx(0.2), 0.3]
    assert graph.samples == 0  # the profile states no batch size


def test_iteration_exposes_a_bucket_ready_at_the_end(topo_8gpu_machines):
    # One 100 MB tensor is one bucket ready at the end of backward: all of it is exposed.
    model = ModelProfile("one", (S,), 0.2, "A100", bucket_cap_bytes=S)
    placement = placement_from_shape(topo_8gpu_machines, [[8]])
    am = AnalyticalModel(topo_8gpu_machines)
    estimate = as_perf_model(am, topo_8gpu_machines).estimate(model, placement)
    assert estimate.exposed_comm_seconds == pytest.approx(am.collective_seconds(placement, S))
    assert estimate.comm_seconds == pytest.approx(estimate.exposed_comm_seconds)
    assert estimate.step_seconds == pytest.approx(0.2 + estimate.exposed_comm_seconds)


@pytest.mark.parametrize("channels", [1, 3, 8])
def test_ring_fast_path_is_bit_identical_to_the_schedule(channels):
    """The schedule-free ring all-reduce (the loop's hot path) against the generic path that
    builds every transfer: equal to the last bit on shapes of every tier."""
    from artist.network.analytical import LinearCollective, _reference_bytes, ring_allreduce_linear
    from conftest import make_topology

    topology = make_topology(racks=3, machines_per_rack=3, gpus_per_machine=4)
    for shape in ([[2]], [[4]], [[1, 1]], [[4, 3]], [[4, 4, 1]], [[2], [2]], [[4, 4], [3], [1, 1, 1]]):
        p = placement_from_shape(topology, shape)
        schedule = allreduce_schedule("ring", p, _reference_bytes(p, channels), channels, dependencies=False)
        assert ring_allreduce_linear(p, channels, NCCL) == LinearCollective.of(schedule, topology, NCCL), shape


def test_ring_fast_path_is_bit_identical_on_random_placements_of_an_ecmp_fabric():
    """The same check on placements drawn at random on an oversubscribed ECMP spine (rings whose hops
    differ in weight, several channels): the latency chain's fold order is the generic walk's."""
    import random

    from artist.network.analytical import LinearCollective, _reference_bytes, ring_allreduce_linear
    from artist.network.symmetry import fabric_form
    from artist.topology import load_topology

    topology = load_topology(REPO / "topologies" / "dally-3tier-ecmp-4to1-100g.yaml", racks=3)
    rng = random.Random(5)
    for _ in range(12):
        gpus = tuple(sorted(rng.sample(range(topology.gpus), rng.choice((3, 5, 9, 17)))))
        _, p = fabric_form(Placement(topology, gpus))
        for channels in (1, 4):
            schedule = allreduce_schedule("ring", p, _reference_bytes(p, channels), channels, dependencies=False)
            assert ring_allreduce_linear(p, channels, NCCL) == LinearCollective.of(schedule, topology, NCCL), gpus
