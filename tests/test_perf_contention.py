"""Contention components and the performance model's shared mode."""

from __future__ import annotations

import numpy as np
import pytest
from fabric_helpers import NIC_GBPS, colliding_pairs, ecmp_topology

from artist.network.flow import FlowModel
from artist.network.flow.maxmin import max_min_rates
from artist.perf.compute import ComputeModel
from artist.perf.contention import contention_components
from artist.perf.model import PerfModel
from artist.placement import Placement
from artist.workload import ModelProfile


def test_components_join_rack_spanning_jobs_through_common_racks_only():
    topo = ecmp_topology(racks=4)  # 4 GPUs per rack
    jobs = {"in-rack": Placement(topo, (0, 1)),     # rack 0 only: never on the spine
            "r01": Placement(topo, (2, 4)),         # racks 0, 1
            "r23": Placement(topo, (8, 12)),        # racks 2, 3
            "r12": Placement(topo, (5, 9)),         # racks 1, 2: joins r01 and r23
            "r3b": Placement(topo, (13,))}          # one GPU
    assert contention_components(jobs) == [["in-rack"], ["r01", "r23", "r12"], ["r3b"]]
    del jobs["r12"]
    assert contention_components(jobs) == [["in-rack"], ["r01"], ["r23"], ["r3b"]]


def test_weighted_max_min_serves_the_heavy_flow_first_and_stays_work_conserving():
    # Flows 0 (weight 1) and 1 (weight 1e-6) leave one NIC (link 0, cap 10); flow 0 also crosses
    # link 1 (cap 4). Flow 0 takes its 4, flow 1 the NIC's remaining 6 (not a fair 5 / 5 split).
    rates = max_min_rates(np.array([0, 0, 1]), np.array([0, 1, 0]), 2, np.array([10.0, 4.0]),
                          np.array([1.0, 1e-6]))
    assert rates == pytest.approx([4.0, 6.0], rel=1e-9)
    # without a second bottleneck the heavy flow takes (almost) everything
    rates = max_min_rates(np.array([0, 1]), np.array([0, 0]), 2, np.array([10.0]), np.array([1.0, 1e-6]))
    assert rates[0] == pytest.approx(10.0, rel=1e-5) and rates.sum() == pytest.approx(10.0, rel=1e-12)


def test_shared_rates_slow_colliding_jobs_and_leave_the_others_alone():
    topo = ecmp_topology(oversubscription=2.0)
    model = ModelProfile("one", tensor_bytes=(16 << 20,), compute_seconds=1e-6, reference_gpu="A100")
    a, b = colliding_pairs(topo, collide=True)
    running = {"a": (model, Placement(topo, a)), "b": (model, Placement(topo, b))}
    shared = PerfModel(FlowModel(topo), ComputeModel(topo), contention="shared")
    isolated = PerfModel(FlowModel(topo), ComputeModel(topo))
    alone = isolated.rates(running)
    together = shared.rates(running)
    bandwidth = (16 << 20) / (NIC_GBPS * 1e9 / 8)  # a 2-rank ring: 2 steps of S/2 at the NIC rate
    for job in running:
        # sharing the port doubles the bandwidth part: one more bandwidth time
        assert together[job].step_seconds - alone[job].step_seconds == pytest.approx(bandwidth, rel=0.02)
        assert shared.estimate(*running[job]).step_seconds == alone[job].step_seconds  # policies: alone
    with pytest.raises(ValueError, match="unknown contention mode"):
        PerfModel(FlowModel(topo), ComputeModel(topo), contention="sometimes")


def test_plain_python_max_min_equals_the_numpy_one_on_random_instances():
    from artist.network.flow.maxmin import max_min_rates_small

    rng = np.random.default_rng(14)
    for _ in range(200):
        flows, links = int(rng.integers(1, 12)), int(rng.integers(1, 8))
        flow_links = [sorted(set(rng.integers(0, links, size=int(rng.integers(1, 4))).tolist())) for _ in range(flows)]
        capacity = rng.uniform(1.0, 10.0, size=links)
        weights = rng.choice([1.0, 1e-6, 1e-12], size=flows)
        flow_of = np.repeat(np.arange(flows), [len(x) for x in flow_links])
        link_of = np.concatenate([np.asarray(x) for x in flow_links])
        expected = max_min_rates(flow_of, link_of, flows, capacity, weights)
        got = max_min_rates_small(flow_links, {i: float(c) for i, c in enumerate(capacity)}, weights.tolist())
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
        # feasibility: no link over capacity
        load = np.bincount(link_of, weights=np.asarray(got)[flow_of], minlength=links)
        assert (load <= capacity * (1 + 1e-9)).all()
