"""ns-3 window transport, switch output arbitration (engine.cc): fifo (deep drop-tail queues, the
default) against round-robin (per-flow queues served a frame at a time in turn). Expectations by
hand on a bundle spine at 8:1 (2 racks x 4 machines x 1 GPU, 100 Gb/s NICs: one 50 Gb/s uplink per
rack), with send_recv nodes so that each job is one flow."""

from __future__ import annotations

import pytest
from fabric_helpers import NIC_GBPS, allreduce_graph, colliding_pairs, ecmp_topology

pytest.importorskip("ns3")

from artist.network.analytical import StartupLatency  # noqa: E402
from artist.network.links import path  # noqa: E402
from artist.network.ns3 import Ns3Model  # noqa: E402
from artist.network.stack import CommSpec  # noqa: E402
from artist.parallel.graph import Node, StepGraph  # noqa: E402

MIB = 1 << 20
MTU = 9000
PAYLOAD = MTU - 16  # the window transport's 16-byte header
WIRE = (MTU + 2) / PAYLOAD  # bytes on the wire per payload byte (2-byte PPP header per frame)
NIC_BPS = NIC_GBPS * 1e9
UPLINK_BPS = 4 * NIC_BPS / 8  # 4 NICs per rack, 8:1


def bundle_8to1():
    topo = ecmp_topology(model="bundle", oversubscription=8.0)
    assert topo.leaf_uplink_bps == UPLINK_BPS
    return topo


def send(src: int, dst: int, nbytes: int, after_s: float = 0.0) -> StepGraph:
    if after_s == 0.0:
        return StepGraph((Node(0, "send_recv", group=(src, dst), nbytes=nbytes),))
    return StepGraph((Node(0, "compute", seconds=after_s),
                      Node(1, "send_recv", deps=(0,), group=(src, dst), nbytes=nbytes)))


def fixed_seconds(topo, src: int, dst: int) -> float:
    """NCCL base + one net step's start-up latency + the path's latency + the first frame's
    store-and-forward on each of its 4 links (NIC, uplink, downlink, NIC)."""
    lat = StartupLatency()
    frame_bits = (MTU + 2) * 8
    store_forward = frame_bits / NIC_BPS * 2 + frame_bits / UPLINK_BPS * 2
    return lat.base_s + lat.net_step_s + path(topo, src, dst).latency_s + store_forward


def test_two_identical_flows_through_one_port_get_half_each():
    topo = bundle_8to1()
    s = 8 * MIB
    answer = Ns3Model(topo, arbitration="round-robin").time({"a": send(0, 4, s), "b": send(1, 5, s)})
    expected = fixed_seconds(topo, 0, 4) + s * WIRE * 8 / (UPLINK_BPS / 2)
    for job in ("a", "b"):
        assert answer[job].step_seconds == pytest.approx(expected, rel=0.005)
    frame_time = (MTU + 2) * 8 / UPLINK_BPS
    assert abs(answer["a"].step_seconds - answer["b"].step_seconds) <= frame_time  # turn by turn, to a frame


def test_a_short_message_behind_a_long_flow_gets_its_fair_share_at_once():
    """The long flow alone keeps its window standing in the uplink's queue (its NIC is twice the
    uplink); a short message starting 400 us later, under round-robin, takes half the uplink at once;
    under fifo it first waits behind most of that window."""
    topo = bundle_8to1()
    short = 256 << 10
    graphs = {"long": send(0, 4, 8 * MIB), "short": send(1, 5, short, after_s=400e-6)}
    rr = Ns3Model(topo, arbitration="round-robin").time(graphs)["short"].node_seconds[1]
    fifo = Ns3Model(topo).time(graphs)["short"].node_seconds[1]
    fair = fixed_seconds(topo, 1, 5) + short * WIRE * 8 / (UPLINK_BPS / 2)
    assert rr == pytest.approx(fair, rel=0.02)
    window = Ns3Model(topo).transport.window_bytes
    assert fifo > fair + 0.5 * window * 8 / UPLINK_BPS  # behind at least half a standing window


def test_the_long_flow_is_work_conserving_under_round_robin():
    """The uplink never idles: the long flow ends when both flows' bytes have crossed it."""
    topo = bundle_8to1()
    long_bytes, short = 8 * MIB, 256 << 10
    graphs = {"long": send(0, 4, long_bytes), "short": send(1, 5, short, after_s=400e-6)}
    ended = Ns3Model(topo, arbitration="round-robin").time(graphs)["long"].step_seconds
    expected = fixed_seconds(topo, 0, 4) + (long_bytes + short) * WIRE * 8 / UPLINK_BPS
    assert ended == pytest.approx(expected, rel=0.005)


def test_without_shared_links_both_arbitrations_give_the_same_answer():
    """Arbitration only orders frames of different flows waiting for one output: a ring alone (one
    channel, each directed link carrying one connection) gets the same bits from the packet run under
    both, and the fast path answers it under both."""
    topo = ecmp_topology()
    graph = {"ring": allreduce_graph((0, 1, 4, 5), 4 * MIB)}
    packet = {arb: Ns3Model(topo, arbitration=arb, fast_path=False).time(graph)["ring"] for arb in
              ("fifo", "round-robin")}
    assert packet["fifo"].step_seconds == packet["round-robin"].step_seconds
    assert packet["fifo"].result.details["path"] == "ns3"
    fast = {arb: Ns3Model(topo, arbitration=arb).time(graph)["ring"] for arb in ("fifo", "round-robin")}
    assert {t.result.details["path"] for t in fast.values()} == {"ns3-message-level"}
    assert fast["fifo"].step_seconds == fast["round-robin"].step_seconds
    # two jobs on disjoint spine ports: no link shared, the same under both arbitrations
    a, b = colliding_pairs(topo, collide=False)
    jobs = {"a": allreduce_graph(a, 4 * MIB), "b": allreduce_graph(b, 4 * MIB)}
    times = [{j: t.step_seconds for j, t in Ns3Model(topo, arbitration=arb, fast_path=False).time(jobs).items()}
             for arb in ("fifo", "round-robin")]
    assert times[0] == times[1]


def test_arbitration_is_in_the_identity_only_when_not_fifo():
    topo = ecmp_topology()
    assert "arbitration" not in Ns3Model(topo).identity()
    assert Ns3Model(topo, arbitration="fifo").identity() == Ns3Model(topo).identity()
    assert Ns3Model(topo, arbitration="round-robin").identity()["arbitration"] == "round-robin"


def test_bad_arbitration_is_refused_in_one_line(tmp_path):
    from sweep_helpers import tiny_spec

    from artist.errors import InputError
    from artist.sweep.spec import load_sweep_spec

    topo = ecmp_topology()
    with pytest.raises(ValueError, match=r"unknown ns-3 arbitration 'lifo'; known: fifo, round-robin"):
        CommSpec("ns3", options={"arbitration": "lifo"}).build(topo)
    with pytest.raises(ValueError, match="window transport"):
        Ns3Model(topo, transport="tcp", arbitration="round-robin")
    with pytest.raises(InputError, match=r"field 'comm.options.ns3'.*unknown ns-3 arbitration 'lifo'") as err:
        load_sweep_spec(tiny_spec(tmp_path, comm={"backend": "ns3", "options": {"ns3": {"arbitration": "lifo"}}}))
    assert "\n" not in str(err.value)
    good = load_sweep_spec(tiny_spec(tmp_path, comm={"backend": "ns3",
                                                     "options": {"ns3": {"arbitration": "round-robin"}}})).runs
    assert good[0].comm.options == (("arbitration", "round-robin"),)


def test_exact_reuse_composes_the_same_bits_under_round_robin():
    """Buckets separated by compute (the network quiet between them) composed from each run alone
    (reuse.py) give the bits of the one full run under round-robin too: its per-flow queues are empty
    whenever the network is quiet. Two channels from one GPU per machine share its NIC and queue at
    the 50 Gb/s uplink, so the packet engine answers (not the fast path) and arbitration matters."""
    topo = bundle_8to1()
    gpus = (0, 1, 4, 5)
    nodes = [Node(0, "compute", seconds=1e-3)]
    for b in range(3):
        nodes.append(Node(2 * b + 1, "compute", seconds=(b + 1) * 2e-3))
        nodes.append(Node(2 * b + 2, "all_reduce", deps=(2 * b + 1,) + ((2 * b,) if b else ()), group=gpus,
                          nbytes=(b + 1) * MIB))
    graph = {"j": StepGraph(tuple(nodes))}
    full = Ns3Model(topo, channels=2, arbitration="round-robin", fast_path=False, exact_reuse=False).time(graph)["j"]
    composed = Ns3Model(topo, channels=2, arbitration="round-robin", fast_path=False).time(graph)["j"]
    assert composed.result.details.get("composed_from") == 3 and "composed_from" not in full.result.details
    assert composed.node_seconds == full.node_seconds and composed.step_seconds == full.step_seconds
    fifo = Ns3Model(topo, channels=2, fast_path=False, exact_reuse=False).time(graph)["j"]
    assert fifo.step_seconds != full.step_seconds  # arbitration does change this step
