"""ns-3 co-simulation: several jobs in one run on shared links, each job's step read from its own
graph; the same hand-computed expectations as tests/test_flow_backend.py, kept small (2-GPU jobs)."""

from __future__ import annotations

import pytest
from fabric_helpers import NIC_GBPS, allreduce_graph, colliding_pairs, ecmp_topology

pytest.importorskip("ns3")

from artist.network.ns3 import Ns3Model  # noqa: E402

MIB = 1 << 20
NIC_BPS = NIC_GBPS * 1e9 / 8


def test_ns3_two_ring_all_reduces_on_one_spine_port_take_twice_the_bandwidth_time():
    topo = ecmp_topology(oversubscription=2.0)  # 2 ports per rack at the NIC speed
    a, b = colliding_pairs(topo, collide=True)
    s = 8 * MIB
    model = Ns3Model(topo)
    tiny = model.time({"a": allreduce_graph(a, 2)})["a"].step_seconds  # latencies only
    alone = model.time({"a": allreduce_graph(a, s)})["a"].step_seconds
    shared = model.time({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
    bandwidth_alone = 2 * (s / 2) / NIC_BPS
    # packets carry 16-byte headers in 9000-byte frames and acks: a little over the fluid figure
    assert (alone - tiny) / bandwidth_alone == pytest.approx(1.0, rel=0.02)
    for job in ("a", "b"):
        assert (shared[job].step_seconds - tiny) / (alone - tiny) == pytest.approx(2.0, rel=0.03)


def test_ns3_jobs_on_disjoint_spine_ports_are_unchanged():
    topo = ecmp_topology()
    a, b = colliding_pairs(topo, collide=False)
    s = 8 * MIB
    model = Ns3Model(topo)
    alone = model.time({"a": allreduce_graph(a, s)})["a"].step_seconds
    shared = model.time({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
    assert shared["a"].step_seconds == pytest.approx(alone, rel=1e-6)
    assert shared["a"].result.details["jobs"] == 2
