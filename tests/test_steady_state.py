"""Steady-state step times (network/steady.py): jobs that repeat their steps together."""

from __future__ import annotations

import pytest
from fabric_helpers import NIC_GBPS, allreduce_graph, colliding_pairs, ecmp_topology

from artist.errors import InputError
from artist.network.cache.cached import Cached
from artist.network.flow import FlowModel
from artist.network.steady import long_run_step_times, repeat_graph, steady_step_times, step_ends
from artist.parallel.graph import Node, StepGraph

MIB = 1 << 20
NIC_BPS = NIC_GBPS * 1e9 / 8  # bytes/s


def _ddp_like(gpus, compute_s, nbytes):
    """A compute node and two buckets all-reduced as they become ready, one after another."""
    return StepGraph((Node(0, "compute", seconds=compute_s, group=gpus),
                      Node(1, "compute", seconds=compute_s / 2, group=gpus),
                      Node(2, "all_reduce", deps=(1,), group=gpus, nbytes=nbytes),
                      Node(3, "all_reduce", deps=(0, 2), group=gpus, nbytes=nbytes)))


def _long_beside_short(s: int = 32 * MIB):
    """The pair of the tests below: A computes T then all-reduces S (T = S / NIC rate), B all-reduces
    4S back to back; their flows share one spine port. Returns (topology, graphs, T)."""
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    t = s / NIC_BPS
    graphs = {"a": StepGraph((Node(0, "compute", seconds=t, group=a),
                              Node(1, "all_reduce", deps=(0,), group=a, nbytes=s))),
              "b": allreduce_graph(b, 4 * s)}
    return topo, graphs, t


def test_repeat_graph_chains_steps_and_step_ends_reads_them():
    g = _ddp_like((0, 1), 1e-3, MIB)
    r = repeat_graph(g, 3)
    assert len(r.nodes) == 12
    # step 2's roots (nodes 4 and 5) wait for step 1's sinks (node 3 only: 0, 1, 2 feed others)
    assert r.nodes[4].deps == (3,) and r.nodes[5].deps == (3,)
    assert r.nodes[6].deps == (5,) and r.nodes[7].deps == (4, 6)
    assert step_ends([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 4, 3) == [4, 8, 12]
    with pytest.raises(ValueError):
        repeat_graph(g, 0)


def test_a_job_alone_has_its_single_step_as_steady_step():
    topo = ecmp_topology(oversubscription=2.0)
    a, _ = colliding_pairs(topo, collide=True)
    model = FlowModel(topo)
    graph = _ddp_like(a, 2e-4, 4 * MIB)
    single = model.time({"a": graph})["a"].step_seconds
    steady = steady_step_times(model, {"a": graph})["a"]
    assert steady.converged and steady.runs == 1
    assert steady.step_seconds == pytest.approx(single, rel=1e-9)
    assert steady.first_step_seconds == pytest.approx(single, rel=1e-9)


def test_a_long_job_sharing_a_port_with_a_short_one_is_slowed_by_the_hand_computed_steady_factor():
    # Two 2-GPU jobs whose flows share one spine port each way. A: compute c, then an all-reduce of
    # S (bandwidth time T = S / NIC rate alone: two ring steps of S/2); B: all-reduces of 4S back to
    # back. In steady state B always sends: A's step is c + 2T (its bytes at half rate), and B gets
    # the whole port while A computes and half while A sends, on average C (c + T) / (c + 2T): with
    # c = T, B's step is 4T x 3/2 = 6T (2x its alone 4T), A's 3T. From a common start only, B's
    # first step is shorter: it has the port to itself once A's first step is over.
    topo, graphs, t = _long_beside_short()
    model = FlowModel(topo)
    steady = steady_step_times(model, graphs)
    assert steady["a"].converged and steady["b"].converged
    assert steady["a"].step_seconds == pytest.approx(3 * t, rel=0.02)
    assert steady["b"].step_seconds == pytest.approx(6 * t, rel=0.02)
    first = model.time(graphs)["b"].step_seconds
    assert first < 5.2 * t  # a single step from the common start misses most of the slowdown
    assert steady["b"].steps_measured >= 9 and steady["a"].steps_run >= steady["b"].steps_run
    assert steady_step_times(FlowModel(topo), graphs) == steady  # deterministic


def test_steady_state_refuses_bad_settings_and_caps_the_steps():
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    model = FlowModel(topo)
    graphs = {"a": allreduce_graph(a, MIB), "b": allreduce_graph(b, 64 * MIB)}
    with pytest.raises(ValueError):
        steady_step_times(model, graphs, window=0)
    with pytest.raises(ValueError):
        steady_step_times(model, graphs, window=3, max_steps=6)
    # b's step is ~100 of a's: a reaches the cap of 7 steps (fast_steps) long before b has 7; b is not settled
    capped = steady_step_times(model, graphs, window=3, max_steps=7, fast_steps=7)
    assert capped["a"].steps_run == 7 and not capped["b"].converged


def test_steady_state_sizes_its_runs_to_the_flow_models_transfer_limit(tmp_path):
    # The long/short pair above: each 2-GPU all-reduce step holds at most 1 x 2 x 2 = 4 transfers by
    # the flow model's bound. With a limit of 40 transfers per run, 9 + 9 steps (72) would be refused;
    # the steady state runs 5 + 5 steps (the most that fit at the same count, 40) and grows no further,
    # so neither job settles (2 windows of 4 measured steps need 9) and both say so.
    topo, graphs, t = _long_beside_short()
    model = FlowModel(topo)
    assert model.transfer_bound({"a": graphs["a"]}) == 4
    model.max_transfers = 40
    with pytest.raises(InputError):
        model.time({j: repeat_graph(g, 9) for j, g in graphs.items()})
    steady = steady_step_times(model, graphs)
    assert steady["a"].steps_run + steady["b"].steps_run <= 10
    assert steady["a"].steps_run == steady["b"].steps_run == 5 and steady["a"].runs == 1
    assert not steady["a"].converged and not steady["b"].converged
    # what was measured is still B's step under A's pattern (2 windows of 2): between alone and steady
    assert 4 * t < steady["b"].step_seconds <= 6.2 * t
    # behind the on-disk cache (as the simulator asks) the limit is the flow model's: the same runs
    cached = Cached(model, tmp_path / "cache")
    assert steady_step_times(cached, graphs) == steady


def test_ns3_co_simulation_reaches_the_same_hand_computed_steady_state():
    # The long/short pair above in ns-3 (packets, window transport), smaller: S = 4 MiB. Alone, a
    # job's steady step is its single step; together B's steady step is ~2x its alone bandwidth
    # time (start-up latencies, a few % here, are where B has the port alone: hence the margin).
    pytest.importorskip("ns3")
    from artist.network.ns3 import Ns3Model

    topo, graphs, t = _long_beside_short(4 * MIB)
    model = Ns3Model(topo)
    single = model.time({"a": graphs["a"]})["a"].step_seconds
    alone = steady_step_times(model, {"a": graphs["a"]})["a"]
    assert alone.converged and alone.step_seconds == pytest.approx(single, rel=1e-6)
    steady = steady_step_times(model, graphs)
    assert steady["a"].converged and steady["b"].converged
    assert steady["a"].step_seconds / (3 * t) == pytest.approx(1.0, abs=0.08)
    assert steady["b"].step_seconds / (6 * t) == pytest.approx(1.0, abs=0.08)


def test_long_run_mean_of_two_rings_on_one_port_halves_their_rate_by_hand():
    # two jobs, each a 2-GPU all-reduce of the same size across the same spine port each way (2:1 spine,
    # one port per rack): repeated back to back they share the port for good, so each one's long-run step
    # is its step alone plus its bandwidth time once more (half the port); the first step is excluded, and
    # the last quarter agrees with the second half
    topo = ecmp_topology(racks=2, machines_per_rack=2, gpus_per_machine=1, oversubscription=2.0)
    s = 8 << 20
    graphs = {"a": StepGraph((Node(0, "all_reduce", group=(0, 2), nbytes=s),)),
              "b": StepGraph((Node(0, "all_reduce", group=(1, 3), nbytes=s),))}
    model = FlowModel(topo)
    alone = model.time({"a": graphs["a"]})["a"].step_seconds
    bandwidth = s / (100e9 / 8)  # a 2-GPU ring moves S each way: 2 x (n-1)/n x S = S per edge at the port rate
    out = long_run_step_times(model, graphs, slowest_steps=12)
    for job in graphs:
        assert out[job].step_seconds == pytest.approx(alone + bandwidth, rel=0.01)
        assert out[job].drift < 0.01 and out[job].steps_measured >= 12
    with pytest.raises(ValueError):
        long_run_step_times(model, graphs, slowest_steps=4)
