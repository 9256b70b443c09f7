"""The flow backend: max-min fair sharing and co-simulated jobs, against hand-computed times."""

from __future__ import annotations

import numpy as np
import pytest
from fabric_helpers import NIC_GBPS, allreduce_graph, colliding_pairs, ecmp_topology

from artist.network.analytical import StartupLatency
from artist.network.flow import FlowModel
from artist.network.flow.maxmin import max_min_rates
from artist.network.stack import CommSpec
from artist.parallel.graph import Node, StepGraph
from artist.placement import placement_from_shape

MIB = 1 << 20
NIC_BPS = NIC_GBPS * 1e9 / 8  # bytes/s


def test_max_min_textbook_example():
    # Links A (cap 1) and B (cap 2); flow 0 crosses A and B, flow 1 only A, flows 2 and 3 only B.
    # A is the bottleneck at 1/2 for flows 0 and 1; B then has 2 - 1/2 left for flows 2, 3: 3/4 each.
    flow_of = np.array([0, 0, 1, 2, 3])
    link_of = np.array([0, 1, 0, 1, 1])
    rates = max_min_rates(flow_of, link_of, 4, np.array([1.0, 2.0]))
    assert rates == pytest.approx([0.5, 0.5, 0.75, 0.75], rel=1e-12)
    # conservation: no link carries more than its capacity, and B is full
    assert rates[0] + rates[1] <= 1.0 + 1e-12 and rates[0] + rates[2] + rates[3] == pytest.approx(2.0)


def _latency_only(model, group):
    """The job's time for a payload of one byte per chunk: its latencies (base, alphas, paths)."""
    return model.time({"j": allreduce_graph(group, 2)})["j"].step_seconds


def test_two_ring_all_reduces_colliding_on_one_spine_port_take_twice_the_bandwidth_time():
    # 2 racks x 4 machines x 1 GPU, NICs and spine ports at 100 Gb/s, 2:1: two ports per rack
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    s = 64 * MIB
    model = FlowModel(topo)
    alone = model.time({"a": allreduce_graph(a, s)})["a"].step_seconds
    shared = model.time({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
    latency = _latency_only(model, a)
    # a 2-rank ring: 2 steps of S/2 each way at the NIC rate alone; sharing the port halves the rate
    bandwidth_alone = 2 * (s / 2) / NIC_BPS
    assert alone - latency == pytest.approx(bandwidth_alone, rel=1e-3)
    for job in ("a", "b"):
        assert (shared[job].step_seconds - latency) / bandwidth_alone == pytest.approx(2.0, rel=0.01)


def test_jobs_on_disjoint_spine_ports_are_unchanged():
    topo = ecmp_topology()
    a, b = colliding_pairs(topo, collide=False)
    s = 64 * MIB
    model = FlowModel(topo)
    alone = {j: model.time({j: allreduce_graph(g, s)})[j].step_seconds for j, g in (("a", a), ("b", b))}
    shared = model.time({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
    assert shared["a"].step_seconds == pytest.approx(alone["a"], rel=1e-12)
    assert shared["b"].step_seconds == pytest.approx(alone["b"], rel=1e-12)


def test_jobs_in_different_racks_on_a_bundle_spine_are_unchanged():
    topo = ecmp_topology(racks=2, model="bundle")
    s = 16 * MIB
    model = FlowModel(topo)
    a, b = (0, 1), (4, 5)  # one machine pair per rack: they share no link
    alone = model.time({"a": allreduce_graph(a, s)})["a"].step_seconds
    shared = model.time({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
    assert shared["a"].step_seconds == shared["b"].step_seconds == alone


def test_a_4_to_1_spine_slows_a_rack_crossing_job_by_the_hand_computed_factor():
    # As in test_fabric_ecmp: a 2-channel ring over 2 racks x 2 machines x 2 GPUs puts two chunks per
    # step on the single 4:1 port where every NIC carries one, so the bandwidth part doubles.
    s = 256 * MIB
    shape = [[2, 2], [2, 2]]
    oversubscribed = ecmp_topology(machines_per_rack=2, gpus_per_machine=2, oversubscription=4.0)
    bundle = ecmp_topology(machines_per_rack=2, gpus_per_machine=2, model="bundle")
    times = []
    for topo in (oversubscribed, bundle):
        model = FlowModel(topo, channels=2)
        group = placement_from_shape(topo, shape)
        times.append(model.collective_seconds(group, s) - model.collective_seconds(group, 16))
    bandwidth_bundle = 14 * (s / 2 / 8) / NIC_BPS  # 14 steps of one chunk per NIC
    assert times[1] == pytest.approx(bandwidth_bundle, rel=0.01)
    assert times[0] / times[1] == pytest.approx(2.0, rel=0.01)


def test_a_dependency_chain_of_compute_and_communication_adds_up():
    # compute 1 ms, then a send of 1 MiB over one NIC hop (alpha + path latency + bytes / NIC rate)
    topo = ecmp_topology(model="bundle")
    lat = StartupLatency()
    graph = StepGraph((Node(0, "compute", seconds=1e-3, group=(0, 1)),
                       Node(1, "send_recv", deps=(0,), group=(0, 1), nbytes=MIB)))
    timing = FlowModel(topo, latency=lat).time({"j": graph})["j"]
    path_s = (2 * 0.01 + 0.13) * 1e-6  # conftest's rack link and switch latencies
    expected = lat.base_s + lat.net_step_s + MIB / NIC_BPS + path_s
    assert timing.node_seconds[1] == pytest.approx(expected, rel=1e-9)
    assert timing.step_seconds == pytest.approx(1e-3 + expected, rel=1e-12)


def test_flow_is_a_registered_backend_and_deterministic():
    topo = ecmp_topology()
    model = CommSpec("flow").build(topo)
    graphs = {"a": allreduce_graph((0, 4, 5), 3 * MIB + 7), "b": allreduce_graph((1, 2, 6), 5 * MIB)}
    first = model.time(graphs)
    again = FlowModel(topo).time(graphs)
    assert [first[j].node_seconds for j in graphs] == [again[j].node_seconds for j in graphs]
    assert model.identity()["contention"] is True


def test_a_question_too_large_for_the_flow_model_is_refused_before_building_it(monkeypatch):
    from artist.errors import InputError
    from artist.network.flow import engine

    monkeypatch.setattr(FlowModel, "max_transfers", 1000)
    topo = ecmp_topology()
    # 8 GPUs, 2 channels: up to 2 x 8 x 14 = 224 transfers per all-reduce; five of them exceed 1000
    graph = StepGraph(tuple(Node(i, "all_reduce", group=tuple(range(8)), nbytes=MIB) for i in range(5)))
    with pytest.raises(InputError, match="more than the flow model's limit of 1000"):
        FlowModel(topo, channels=2).time({"j": graph})
    assert engine.MAX_TRANSFERS == 5_000_000  # the engine's own check stays as a second guard
