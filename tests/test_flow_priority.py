"""Strict sender priority in the flow backend (maxmin.py levels): exact where 1e-6 ** k weights
underflowed (~50+ flows per sender), against hand-computed expectations."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fabric_helpers import NIC_GBPS, ecmp_topology

from artist.network.analytical import StartupLatency
from artist.network.flow import FlowModel
from artist.network.flow.maxmin import max_min_rates, max_min_rates_small
from artist.network.links import path
from artist.parallel.graph import Node, StepGraph

NIC_BPS = NIC_GBPS * 1e9 / 8
MIB = 1 << 20


def test_two_hundred_priority_levels_fill_a_sender_greedily_by_hand():
    # 200 flows leave one NIC (link 0, capacity 100) in priority order 0..199; flow k also crosses
    # its own receiver link of capacity 1 + (k % 3). Strict priority, work-conserving: by hand,
    # each flow in turn takes min(its receiver, what the NIC has left) until the NIC is full.
    flows = 200
    receiver = [1.0 + (k % 3) for k in range(flows)]
    expected, left = [], 100.0
    for r in receiver:
        take = min(r, left)
        expected.append(take)
        left -= take
    flow_of = np.repeat(np.arange(flows), 2)
    link_of = np.ravel([[0, 1 + k] for k in range(flows)])
    capacity = np.array([100.0] + receiver)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 1e-6 ** 200 is 0.0: the old weights divided by zero here
        rates = max_min_rates(flow_of, link_of, flows, capacity, priority=np.arange(flows))
        small = max_min_rates_small([[0, 1 + k] for k in range(flows)],
                                    {i: float(c) for i, c in enumerate(capacity)}, [1.0] * flows, list(range(flows)))
    assert rates == pytest.approx(expected, abs=1e-9)
    assert small == pytest.approx(expected, abs=1e-9)
    assert sum(expected) == pytest.approx(100.0) and expected[-1] == 0.0


def test_priority_levels_are_the_limit_of_weights_far_apart():
    # where eps ** level does not underflow, weighted max-min with eps -> 0 tends to the levels
    rng = np.random.default_rng(141)
    for _ in range(100):
        flows, links = int(rng.integers(1, 10)), int(rng.integers(1, 6))
        flow_links = [sorted(set(rng.integers(0, links, size=int(rng.integers(1, 4))).tolist())) for _ in range(flows)]
        capacity = rng.uniform(1.0, 10.0, size=links)
        levels = rng.integers(0, 3, size=flows)
        flow_of = np.repeat(np.arange(flows), [len(x) for x in flow_links])
        link_of = np.concatenate([np.asarray(x) for x in flow_links])
        exact = max_min_rates(flow_of, link_of, flows, capacity, priority=levels)
        weighted = max_min_rates(flow_of, link_of, flows, capacity, 1e-9 ** levels.astype(float))
        assert exact == pytest.approx(weighted, rel=1e-6, abs=1e-6)
        small = max_min_rates_small(flow_links, {i: float(c) for i, c in enumerate(capacity)}, [1.0] * flows,
                                    levels.tolist())
        assert small == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_a_sender_with_64_connections_keeps_its_nic_busy_by_hand():
    # all_to_all of S on 2 GPUs (machines in two racks) over 64 channels: each GPU sends S/2 to the
    # other as 64 flows from one NIC (levels 0..63). Work-conserving: the NIC is never idle, so the
    # step is NCCL's base latency + one network hop's start-up + (S/2) / NIC + the path's latency.
    topo = ecmp_topology(racks=2, machines_per_rack=1, gpus_per_machine=1, model="bundle")
    s = 64 * MIB
    graph = StepGraph((Node(0, "all_to_all", group=(0, 1), nbytes=s),))
    latency = StartupLatency()
    p = path(topo, 0, 1, 0)
    expected = latency.base_s + latency.per_step(p.kind) + (s / 2) / NIC_BPS + p.latency_s
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = FlowModel(topo, channels=64).time({"x": graph})["x"].step_seconds
    assert step == pytest.approx(expected, rel=1e-6)


def test_the_all_to_all_of_16_gpus_on_8_channels_runs_without_underflow_within_its_bounds():
    # 16 GPUs, one per machine, 2 racks on a non-blocking bundle spine: 15 peers x 8 channels = 120
    # flows per sender. Every NIC sends and receives 15/16 of S: the step is at least that at the NIC
    # rate plus the start-up latencies; with one fair share per flow (an all_to_all has no dependencies,
    # so its flows do not take turns at the sender) every flow drains at the same rate, so it is that
    # plus a path's latency (within 1 %; when a sender's flows took turns, receivers that several
    # senders' first flows picked waited: +5 %).
    topo = ecmp_topology(racks=2, machines_per_rack=8, gpus_per_machine=1, model="bundle")
    s = 64 * MIB
    graph = StepGraph((Node(0, "all_to_all", group=tuple(range(16)), nbytes=s),))
    latency = StartupLatency()
    p = path(topo, 0, 15, 0)
    bound = latency.base_s + latency.per_step(p.kind) + (15 / 16) * s / NIC_BPS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        timing = FlowModel(topo, channels=8).time({"x": graph})["x"]
    assert bound <= timing.step_seconds <= 1.01 * bound
    assert timing.result.details["transfers"] == 16 * 15 * 8


def test_an_all_to_all_keeps_one_fair_share_per_flow_beside_a_bulk_sender_by_hand():
    # 4 racks x 2 machines x 1 GPU, 2:1 ECMP spine: one spine port per rack, at the NIC rate C. An
    # all_to_all of S on GPUs 0, 2, 4 (racks 0, 1, 2) beside a send_recv of L from GPU 1 (rack 0) to
    # GPU 6 (rack 3). Rack 0's uplink carries GPU 0's two flows and the bulk flow: per-flow round-robin
    # ports (ns-3's arbitration) give each C/3 until GPU 0's flows of S/3 drain, at S/C; every other
    # all_to_all flow meets at most two flows per link and ends earlier. The bulk flow then has the port
    # alone. A collective without dependencies (its flows all in flight from the start) shares per
    # flow; only chunk pipelines take their turns at a sender (engine._sender_first).
    topo = ecmp_topology(racks=4, machines_per_rack=2, gpus_per_machine=1, oversubscription=2.0)
    assert path(topo, 0, 2, 0).links[1] == path(topo, 1, 6, 0).links[1]  # rack 0's one uplink
    s, bulk = 12 * MIB, 48 * MIB
    graphs = {"a2a": StepGraph((Node(0, "all_to_all", group=(0, 2, 4), nbytes=s),)),
              "bulk": StepGraph((Node(0, "send_recv", group=(1, 6), nbytes=bulk),))}
    latency = StartupLatency()
    p = path(topo, 0, 2, 0)
    start = latency.base_s + latency.per_step(p.kind)
    timing = FlowModel(topo).time(graphs)
    assert timing["a2a"].step_seconds == pytest.approx(start + s / NIC_BPS + p.latency_s, rel=1e-6)
    assert timing["bulk"].step_seconds == pytest.approx(start + (bulk + 2 * s / 3) / NIC_BPS + p.latency_s,
                                                        rel=1e-6)
