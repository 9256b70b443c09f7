"""The phase model's colliding bursts (model.burst_terms, engine.py's collision caps): a job whose channels
share one NIC takes turns at the NIC rate and hides each round's hop latency behind its sibling's burst;
another job's burst on a shared spine port halves its rate and the latency shows. Hand-worked times from
the round-time formula, and the cases the extension must leave exactly as they were."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import small_topology_mapping
from fabric_helpers import NIC_GBPS

from artist.network.analytical import AnalyticalModel, StartupLatency
from artist.network.ns3 import engine_build
from artist.network.phase import PhaseContention
from artist.network.phase.demand import collective_demand
from artist.network.phase.engine import _collision_caps, run_component
from artist.parallel.graph import Node, StepGraph
from artist.topology import Topology

NIC = NIC_GBPS * 1e9 / 8  # bytes/s of a NIC, and of a spine port on the fabrics below unless said otherwise
LATENCY = StartupLatency()  # NCCL's: base 8.4 us, 14 us per NIC hop
ENGINES = ["python"] + (["compiled"] if engine_build.find_compiler() is not None else [])


def _topology(machines_per_rack=2, port_gbps=NIC_GBPS, oversubscription=1.0) -> Topology:
    """2 racks of 1-GPU machines, an ecmp spine, no link or switch latencies (a hop costs NCCL's 14 us)."""
    data = small_topology_mapping(racks=2, machines_per_rack=machines_per_rack, gpus_per_machine=1,
                                  oversubscription=oversubscription)
    for tier in data["tiers"].values():
        tier.update(link_latency_us=0.0, switch_latency_us=0.0)
    data["tiers"]["rack"]["bandwidth_gbps"] = NIC_GBPS
    data["tiers"]["spine"]["bandwidth_gbps"] = port_gbps
    data["tiers"]["spine"]["model"] = "ecmp"
    return Topology.from_mapping(data, "<test>")


def _ring(gpus, nbytes):
    return StepGraph((Node(0, "all_reduce", group=tuple(gpus), nbytes=nbytes),))


def _without_bursts(jobs):
    """The jobs with every bundle's burst terms zeroed: the model as it was without them (version 8)."""
    return [dataclasses.replace(job, nodes=tuple(
        dataclasses.replace(node, bundles=tuple(dataclasses.replace(b, burst_rate=0.0, exposed=0.0)
                                                for b in node.bundles)) for node in job.nodes)) for job in jobs]


def _ports_carry_one_edge_of_each(topo, jobs, channels=2):
    """Every spine port the jobs' rings cross carries exactly one edge of each job (ECMP's hash here)."""
    on: dict = {}
    for name, gpus in jobs.items():
        for bundle in collective_demand(topo, "all_reduce", gpus, 1 << 20, "ring", channels, LATENCY).bundles:
            for link in bundle.links:
                if link[0].startswith("port"):
                    on.setdefault(link, []).append(name)
    return on and all(sorted(names) == sorted(jobs) for names in on.values())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("nbytes", [8 << 20, 64 << 10])
def test_two_rings_whose_channels_share_a_nic_show_their_hop_latency_when_their_bursts_collide(
        monkeypatch, engine, nbytes):
    """Jobs a (GPUs 0, 2) and b (GPUs 1, 3), one GPU per machine, 2 channels each, 2 racks, 1:1 spine: each
    spine port carries one channel's edge of each job, so fluid rates fit (each edge at most half a port)
    and without the extension neither job slows. By hand: a 2-GPU ring all-reduce of S bytes on 2 channels
    moves work = S / 2 per edge in 2 rounds (one reduce-scatter, one all-gather chunk c = work / 2); the
    two channels share the NIC, so an edge's rate alone is NIC / 2 and its burst rate R = NIC. Alone:
    base + 2 hops + B (B = work / (NIC / 2)); its bundles, after base + 1 hop, are capped at their mean
    rate cap = work / (hop + B). A round takes max(2 c / R, c / R + hop) alone, max(2 c / R, 2 c / R + hop)
    when another job's burst halves it; the latency shown per byte when every burst collides is
    exposed = 2 rounds x that difference / work. The chance of a collision on a port of capacity NIC:
    (the other job's mean rate cap - (NIC - R)) / R = cap / NIC. Each bundle drains at
    cap' = 1 / (1 / cap + P exposed) (half a port is more than that), both jobs in lock step."""
    monkeypatch.setenv("ARTIST_PHASE_ENGINE", engine)
    topo = _topology()
    assert _ports_carry_one_edge_of_each(topo, {"a": (0, 2), "b": (1, 3)})
    demand = collective_demand(topo, "all_reduce", (0, 2), nbytes, "ring", 2, LATENCY)
    work, hop, rounds = nbytes / 2, LATENCY.net_step_s, 2
    assert [b.edge_bytes for b in demand.bundles] == [work] * 4
    assert demand.rounds == (rounds,) * 4
    assert demand.alone_rates == pytest.approx([NIC / 2] * 4) and demand.burst_rates == pytest.approx([NIC] * 4)

    bandwidth = work / (NIC / 2)
    alone = LATENCY.base_s + 2 * hop + bandwidth
    first = LATENCY.base_s + hop
    cap = work / (hop + bandwidth)
    chunk, burst, siblings = work / rounds, NIC, 2
    round_alone = max(siblings * chunk / burst, chunk / burst + hop)
    round_collided = max(siblings * chunk / burst, 2 * chunk / burst + hop)
    exposed = rounds * (round_collided - round_alone) / work
    p = (cap - (NIC - burst)) / burst
    assert 0 < p < 1
    expected = first + work / (1 / (1 / cap + p * exposed))

    model = PhaseContention(AnalyticalModel(topo, channels=2, latency=LATENCY))
    got = model.steady({"a": _ring((0, 2), nbytes), "b": _ring((1, 3), nbytes)})
    for job in ("a", "b"):
        assert got[job].alone.step_seconds == pytest.approx(alone, rel=1e-9)
        assert got[job].shared.step_seconds == pytest.approx(expected, rel=1e-9)
        assert got[job].shared.step_seconds / got[job].alone.step_seconds == pytest.approx(expected / alone,
                                                                                          rel=1e-9)
        assert got[job].shared.engine == engine
    # the large pair shows one hop per round (its chunks outlast a hop), the small one its chunk time
    if nbytes == 8 << 20:
        assert exposed == pytest.approx(rounds * hop / work)
    else:
        assert exposed == pytest.approx(rounds * (chunk / burst) / work)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_alone_and_components_without_nic_shared_channels_are_timed_as_without_the_extension(engine):
    """A job alone has no one to collide with: its NIC-shared 2-channel ring takes exactly what it takes
    with its burst terms zeroed (and the fabric's time alone). With 1 channel nothing shares a NIC: no
    bundle has burst terms, and two rings on one 2:1 spine port take version 8's hand-worked time:
    base + hop + max(hop + b, 2 b) (tests/test_phase_contention.py)."""
    topo = _topology()
    model = PhaseContention(AnalyticalModel(topo, channels=2, latency=LATENCY), keep_jobs=True)
    model.steady({"a": _ring((0, 2), 8 << 20), "b": _ring((1, 3), 8 << 20)})
    (timed,) = model.components()
    assert all(b.exposed > 0 for job in timed.jobs for node in job.nodes for b in node.bundles)
    for job, zeroed in zip(timed.jobs, _without_bursts(timed.jobs)):
        assert (run_component([job], timed.capacity, steps=1, engine=engine)
                == run_component([zeroed], timed.capacity, steps=1, engine=engine))

    one_port = _topology(oversubscription=2.0)  # one spine port a rack
    nbytes = 16 << 20
    model = PhaseContention(AnalyticalModel(one_port, latency=LATENCY), keep_jobs=True)
    got = model.steady({"a": _ring((0, 2), nbytes), "b": _ring((1, 3), nbytes)})
    (timed,) = model.components()
    assert all(b.burst_rate == 0 and b.exposed == 0 for job in timed.jobs for node in job.nodes
               for b in node.bundles)
    b = nbytes / NIC
    hop = LATENCY.net_step_s
    for job in ("a", "b"):
        assert got[job].shared.step_seconds == pytest.approx(LATENCY.base_s + hop + max(hop + b, 2 * b), rel=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_no_collision_where_a_port_has_room_for_both_jobs_bursts(engine):
    """Spine ports of twice the NIC rate, 4 machines a rack: each job's two channels take different ports,
    each port one channel's edge of each job. A burst (the NIC rate) leaves half a port, more than the other
    job's mean rate: P = 0, no slowdown, the same answers as without the extension bit for bit."""
    topo = _topology(machines_per_rack=4, port_gbps=2 * NIC_GBPS)
    assert _ports_carry_one_edge_of_each(topo, {"a": (0, 4), "b": (1, 5)})
    model = PhaseContention(AnalyticalModel(topo, channels=2, latency=LATENCY), keep_jobs=True)
    got = model.steady({"a": _ring((0, 4), 8 << 20), "b": _ring((1, 5), 8 << 20)})
    (timed,) = model.components()
    assert all(b.exposed > 0 and b.crossings and all(m == 1.0 for _, m in b.crossings)
               for job in timed.jobs for node in job.nodes for b in node.bundles)
    for job in ("a", "b"):
        assert got[job].shared.step_seconds == pytest.approx(got[job].alone.step_seconds, rel=1e-12)
    alone = [step.alone for step in timed.steps]
    assert (run_component(timed.jobs, timed.capacity, alone=alone, engine=engine)
            == run_component(_without_bursts(timed.jobs), timed.capacity, alone=alone, engine=engine))


def test_the_collision_chance_is_the_other_jobs_load_beyond_the_room_a_burst_leaves_clamped_to_0_1():
    """_collision_caps on a hand-built group: bundle 0 (job 0, cap 4, burst rate 8, exposed 0.1 s/B) on a
    link of capacity 10 with job 1's bundles of mean rate x; job 0's own other bundle (cap 5) does not
    count. P = (x - (10 - 8)) / 8 in [0, 1]; the cap becomes 1 / (1 / 4 + P 0.1); the others keep theirs."""
    classes = [(0, 8.0, 0.1), (0, 0.0, 0.0), (1, 0.0, 0.0)]  # per class: (job, burst rate, exposed)
    capacity = np.array([10.0])

    def caps(x):
        group = [[0, 0, 1.0, 1.0, 4.0, ((0, 1.0),), 0.0, 0, 0, 0.0],
                 [0, 1, 1.0, 1.0, 5.0, ((0, 1.0),), 0.0, 1, 1, 0.0],
                 [1, 0, 1.0, 1.0, x, ((0, 1.0),), 0.0, 2, 2, 0.0]]
        return [a[4] for a in _collision_caps(group, classes, capacity)]

    assert caps(1.5) == [4.0, 5.0, 1.5]  # room for its burst (2) beyond the other job's 1.5: P = 0
    assert caps(2.0) == [4.0, 5.0, 2.0]  # exactly filled: P = 0
    assert caps(6.0) == pytest.approx([1 / (1 / 4 + 0.5 * 0.1), 5.0, 6.0])  # P = (6 - 2) / 8
    assert caps(20.0) == pytest.approx([1 / (1 / 4 + 1.0 * 0.1), 5.0, 20.0])  # P clamped at 1


def test_sibling_channels_on_one_link_burst_at_their_nics_rate_not_the_sum():
    """Bundle 0 (cap 4 per edge, burst rate 8: two channels taking turns at one NIC) crosses the link (capacity
    10) with both channels' edges (load 2): its peak there is the NIC's 8, not 2 x 8 (they take turns), so
    beside another job's mean rate x, P = (x - (10 - 8)) / 8. With edges from two NICs (load 4) the peak is
    4 x 4 = 16: P = (x - (10 - 16)) / 16. Seen in ns-3: two 2-channel rings whose edges exactly fill a port
    (2 x 12.5 GB/s on 25 GB/s) run at 1.002x alone's step, where counting 2 x burst gave +10.6 %."""
    classes = [(0, 8.0, 0.1), (1, 0.0, 0.0)]
    capacity = np.array([10.0])

    def cap(load, x):
        group = [[0, 0, 1.0, 1.0, 4.0, ((0, load),), 0.0, 0, 0, 0.0],
                 [1, 0, 1.0, 1.0, x, ((0, 1.0),), 0.0, 1, 1, 0.0]]
        return _collision_caps(group, classes, capacity)[0][4]

    assert cap(2.0, 2.0) == 4.0  # exactly filled beside its NIC's burst: P = 0
    assert cap(2.0, 6.0) == pytest.approx(1 / (1 / 4 + 0.5 * 0.1))  # P = (6 - 2) / 8
    assert cap(4.0, 2.0) == pytest.approx(1 / (1 / 4 + 0.5 * 0.1))  # P = (2 + 6) / 16
