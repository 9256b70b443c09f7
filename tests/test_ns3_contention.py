"""ns-3 co-simulation: several jobs in one run on shared links, each job's step read from its own
graph; the same hand-computed expectations as tests/test_flow_backend.py, kept small (2-GPU jobs)."""

from __future__ import annotations

import pytest
from fabric_helpers import NIC_GBPS, allreduce_graph, colliding_pairs, ecmp_topology

pytest.importorskip("ns3")

from artist.network.analytical import StartupLatency  # noqa: E402
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


def test_artist_comm_jobs_on_ns3_prints_alone_and_shared(tmp_path, monkeypatch, capsys):
    import json

    import yaml
    from conftest import small_topology_mapping

    from artist.cli import main

    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))
    topo = small_topology_mapping(racks=2, machines_per_rack=4, gpus_per_machine=1, oversubscription=2.0)
    topo["tiers"]["rack"]["bandwidth_gbps"] = NIC_GBPS
    topo["tiers"]["spine"].update(bandwidth_gbps=NIC_GBPS, model="ecmp")
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(topo))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.yaml").write_text(yaml.safe_dump(
        {"name": "m", "tensors": [["w", 1 << 20]],
         "compute": {"reference_gpu": "A100", "seconds_per_iteration": 1e-6, "source": "test: negligible"}}))
    a, b = colliding_pairs(ecmp_topology(oversubscription=2.0), collide=True)
    argv = ["comm", "--topology", str(tmp_path / "t.yaml"), "--models", str(tmp_path / "models"),
            "--backend", "ns3", "--json", "--job", f"m:{a[0]},{a[1]}", "--job", f"m:{b[0]},{b[1]}"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    bandwidth = (4 << 20) / NIC_BPS  # 4 MiB of fp32 gradient, a 2-rank ring: 2 steps of S/2
    # half the port doubles the bytes' time; the second step's start-up (one NIC hop) hides behind them
    hidden = StartupLatency().net_step_s
    assert [r["backend"] for r in rows] == ["ns3", "ns3"]
    for r in rows:
        assert r["shared_s"] - r["alone_s"] == pytest.approx(bandwidth - hidden, rel=0.05)


def test_ns3_and_flow_agree_on_rail_optimised_racks():
    from test_fabric_rails import rails_topology

    from artist.network.flow import FlowModel

    topo = rails_topology(oversubscription=4.0)  # a rail leaf's uplink: half a NIC
    graphs = {"cross": allreduce_graph((0, 5), 4 * MIB), "same": allreduce_graph((1, 13), 4 * MIB)}
    packets = Ns3Model(topo).time(graphs)
    fluid = FlowModel(topo).time(graphs)
    for job in graphs:
        assert fluid[job].step_seconds == pytest.approx(packets[job].step_seconds, rel=0.03)
    # Both cross the uplink of rack 0's rail-1 leaf (cross: 5 -> 0 leaves rail 1; same: 1 -> 13), 200 Gb/s
    # at 4:1, 100 Gb/s each: 2 ring steps of 2 MiB at 12.5 GB/s, plus latencies
    bandwidth = 2 * (2 * MIB) / (100e9 / 8)
    for job in graphs:
        assert bandwidth < packets[job].step_seconds < 1.15 * bandwidth
