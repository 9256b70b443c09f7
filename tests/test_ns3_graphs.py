"""ns-3 executes step graphs: every collective kind against hand-computed α-β times
(tests/alpha_beta.py), dependencies and compute timers inside the engine, and several
jobs' graphs in one run."""

from __future__ import annotations

import pytest

from alpha_beta import BASE, NIC_BPS, ONE_MACHINE, TWO_RACKS, expected_seconds
from artist.parallel.graph import Node, StepGraph
from artist.placement import Placement, placement_from_shape
from conftest import make_topology

pytestmark = pytest.mark.ns3

pytest.importorskip("artist.network.ns3")
from artist.network.ns3 import Ns3Model, Ns3Worker  # noqa: E402

S = 16 * 2**20  # 16 MiB: bandwidth-dominated, a few seconds of ns-3
TOPO = make_topology(gpus_per_machine=8)  # conftest's topo_8gpu_machines


@pytest.fixture(scope="module")
def ns3_model():
    worker = Ns3Worker()
    yield Ns3Model(TOPO, worker=worker)
    worker.close()


def _group(shape, kind):
    gpus = placement_from_shape(TOPO, shape).gpus
    if kind == "send_recv":
        return (gpus[0], gpus[1] if shape == ONE_MACHINE else gpus[8])
    return gpus


@pytest.mark.parametrize("shape", [ONE_MACHINE, TWO_RACKS], ids=["one-machine", "two-racks"])
@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "all_to_all", "send_recv"])
def test_collective_alone_matches_hand_computed_alpha_beta(ns3_model, kind, shape):
    """Within 3 %: frames carry a 16-byte header, acks share the links, and each switch
    stores a 9000-byte frame before forwarding it, none of which α-β counts.

    Ring passes across racks are bracketed instead: α-β adds the whole latency chain (2 NIC
    + 13 NVLink hops, ~76 µs here) to the bandwidth term, an upper bound (NCCL's cost
    composition), while in the packet run the NVLink hops' start-up latencies overlap the
    NIC-bound transfers; no schedule can beat base + the busiest link's bytes / bandwidth."""
    graph = StepGraph((Node(0, kind, group=_group(shape, kind), nbytes=S),))
    timing = ns3_model.time({"j": graph})["j"]
    alpha_beta = expected_seconds(kind, shape, S)
    if shape == TWO_RACKS and kind in ("all_gather", "reduce_scatter"):
        floor = BASE + 15 * (S / 16) / NIC_BPS
        assert floor < timing.node_seconds[0] < alpha_beta * 1.03
    else:
        assert timing.node_seconds[0] == pytest.approx(alpha_beta, rel=0.03)
    # the graph-level question and the one-collective question agree
    group = Placement(TOPO, _group(shape, kind))
    assert ns3_model.collective_seconds(group, S, kind) == pytest.approx(timing.node_seconds[0], rel=1e-9)


def test_dependencies_and_compute_timers_run_inside_the_engine(ns3_model):
    """all-gather -> 1 ms compute (a timer in the engine) -> send/recv: each communication node
    takes its alone time, and the simulated end equals the critical path."""
    gpus = placement_from_shape(TOPO, TWO_RACKS).gpus
    graph = StepGraph((
        Node(0, "all_gather", group=gpus, nbytes=S),
        Node(1, "compute", deps=(0,), seconds=1e-3, group=gpus),
        Node(2, "send_recv", deps=(1,), group=(gpus[0], gpus[8]), nbytes=S),
    ))
    timing = ns3_model.time({"j": graph})["j"]
    ag = ns3_model.collective_seconds(Placement(TOPO, gpus), S, "all_gather")
    sr = ns3_model.collective_seconds(Placement(TOPO, (gpus[0], gpus[8])), S, "send_recv")
    assert timing.node_seconds == pytest.approx((ag, 1e-3, sr), rel=1e-6)
    assert timing.result.details["simulated_end_seconds"] == pytest.approx(timing.step_seconds, rel=1e-6)


def test_two_jobs_sharing_no_link_each_take_their_alone_time(ns3_model):
    """Job a: GPUs 0-3 and 8-11 (machines 0 and 1); job b: GPUs 4-7 and 12-15 of the same
    machines. Every GPU has its own NVSwitch port and NIC, so in one run together each job's
    all-reduce takes exactly what it takes alone."""
    a = StepGraph((Node(0, "all_reduce", group=(0, 1, 2, 3, 8, 9, 10, 11), nbytes=S),
                   Node(1, "all_to_all", deps=(0,), group=(0, 1, 2, 3, 8, 9, 10, 11), nbytes=S)))
    b = StepGraph((Node(0, "compute", seconds=2e-4, group=(4, 5, 6, 7, 12, 13, 14, 15)),
                   Node(1, "all_reduce", deps=(0,), group=(4, 5, 6, 7, 12, 13, 14, 15), nbytes=S // 2)))
    together = ns3_model.time({"a": a, "b": b})
    alone = {"a": ns3_model.time({"a": a})["a"], "b": ns3_model.time({"b": b})["b"]}
    for job in ("a", "b"):
        assert together[job].node_seconds == pytest.approx(alone[job].node_seconds, rel=1e-9)
    assert together["a"].result.details["jobs"] == 2
