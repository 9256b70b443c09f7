"""Run metrics of shared contention, against expectations worked out by hand: the share of jobs that met
contention, the slowdown distribution and the spine's time-averaged utilisation.

Set-up (as tests/test_simulator_contention.py): two 2-GPU jobs, one GPU in each rack, hashed onto one spine
port in both directions, both starting at 0; a runs 100 steps, b 300, so they share the port while a runs
(b's first half or so) and b runs alone afterwards; c is a 1-GPU job that never leaves its machine."""

from __future__ import annotations

import numpy as np
import pytest
from fabric_helpers import NIC_GBPS, colliding_pairs, ecmp_topology

from artist.metrics import job_table, summary
from artist.network.flow import FlowModel
from artist.perf.compute import ComputeModel
from artist.perf.model import PerfModel
from artist.placement import Placement
from artist.simulator import SimulatorConfig, simulate
from artist.workload import Job
from test_simulator_contention import MODEL, Pinned


def _run(topo, jobs, gpus, contention="shared"):
    config = SimulatorConfig(round_interval_s=None, restore_seconds=0.0, contention=contention)
    return simulate(topo, jobs, {"one": MODEL}, Pinned(gpus), FlowModel(topo), config)


def test_two_jobs_on_one_port_then_one_alone():
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    c = next(g for g in range(topo.gpus) if g not in a + b)
    perf = PerfModel(FlowModel(topo), ComputeModel(topo), "shared")
    alone = perf.estimate(MODEL, Placement(topo, a)).step_seconds
    shared = perf.shared({"a": (MODEL, Placement(topo, a)), "b": (MODEL, Placement(topo, b))})
    sa, sb = shared["a"].step_seconds, shared["b"].step_seconds
    jobs = [Job("a", 0.0, "one", 2, 100), Job("b", 0.0, "one", 2, 300), Job("c", 0.0, "one", 1, 10)]
    result = _run(topo, jobs, {"a": a, "b": b, "c": (c,)})
    row = summary(result)
    # a and b share a component (racks 0 and 1 both) from t = 0; c never leaves its machine
    assert job_table(result).set_index("job_id")["met_contention"].to_dict() == {"a": True, "b": True, "c": False}
    assert row["met_contention_fraction"] == pytest.approx(2 / 3)
    # slowdowns: a all its life at sa; b 100 * sa seconds shared (100 * sa / sb steps), the rest alone; c 1
    finish_a = 100 * sa
    steps_b_shared = finish_a / sb
    slow_a = sa / alone
    slow_b = (finish_a + (300 - steps_b_shared) * alone) / (300 * alone)
    low, mid, high = sorted([slow_a, slow_b, 1.0])
    assert row["contention_slowdown_p50"] == pytest.approx(mid, rel=1e-9)
    # numpy's default (linear) p99 of three values: 0.99 * 2 = 1.98 of the way along the sorted list
    assert row["contention_slowdown_p99"] == pytest.approx(mid + 0.98 * (high - mid), rel=1e-9)
    assert row["contention_slowdown_max"] == pytest.approx(high, rel=1e-9)
    assert row["contention_slowdown_mean"] == pytest.approx((slow_a + slow_b + 1.0) / 3, rel=1e-9)
    # spine's busiest port: both rings' gradient T per step (each ring puts T on it per step) until a ends,
    # then b's alone, nothing after b; averaged over the makespan (b's end: c is long done)
    finish_b = finish_a + (300 - steps_b_shared) * alone
    port = NIC_GBPS * 1e9 / 8
    gradient = MODEL.total_bytes
    busiest = (finish_a * 2 * gradient / sa + (finish_b - finish_a) * gradient / alone) / port / finish_b
    assert result.makespan == pytest.approx(finish_b, rel=1e-12)
    assert row["spine_busiest_utilisation_mean"] == pytest.approx(busiest, rel=1e-9)
    assert 0 < row["spine_mean_utilisation_mean"] <= row["spine_busiest_utilisation_mean"]


def test_jobs_on_disjoint_ports_still_met_contention_by_sharing_racks():
    """Components are an upper bound on who interacts (perf/contention.py): two rack-spanning jobs on
    common racks are one component even when their flows hash onto disjoint ports; neither slows."""
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=False)
    result = _run(topo, [Job("a", 0.0, "one", 2, 50), Job("b", 0.0, "one", 2, 50)], {"a": a, "b": b})
    row = summary(result)
    assert row["met_contention_fraction"] == 1.0
    assert row["contention_slowdown_p50"] == pytest.approx(1.0, rel=1e-12)
    assert row["contention_slowdown_p99"] == pytest.approx(1.0, rel=1e-12)


def test_a_job_that_starts_after_its_neighbour_left_never_met_contention():
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    perf = PerfModel(FlowModel(topo), ComputeModel(topo), "shared")
    after = 10 * perf.estimate(MODEL, Placement(topo, a)).step_seconds * 2  # well after a's 10 steps
    result = _run(topo, [Job("a", 0.0, "one", 2, 10), Job("b", after, "one", 2, 10)], {"a": a, "b": b})
    row = summary(result)
    assert row["met_contention_fraction"] == 0.0
    assert np.isclose(row["contention_slowdown_max"], 1.0)


def test_isolated_tables_keep_their_columns():
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    result = _run(topo, [Job("a", 0.0, "one", 2, 10), Job("b", 0.0, "one", 2, 10)], {"a": a, "b": b}, "isolated")
    assert "met_contention" not in job_table(result)
    assert "met_contention_fraction" not in summary(result)
