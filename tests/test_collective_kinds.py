"""All-gather, reduce-scatter, all-to-all and send/recv on the analytical backend against
hand-computed α-β times (tests/alpha_beta.py), alone and as nodes of a step graph."""

import pytest

from alpha_beta import ONE_MACHINE, TWO_RACKS, expected_seconds
from artist.network.analytical import AnalyticalModel
from artist.network.collectives import collective_schedule
from artist.parallel.graph import Node, StepGraph
from artist.placement import Placement, placement_from_shape

S = 64 * 2**20  # 64 MiB
KINDS = ("all_gather", "reduce_scatter", "all_to_all", "send_recv")


def _group(topology, shape, kind):
    placement = placement_from_shape(topology, shape)
    if kind == "send_recv":
        gpus = placement.gpus
        return Placement(topology, (gpus[0], gpus[1] if shape == ONE_MACHINE else gpus[8]))
    return placement


@pytest.mark.parametrize("shape", [ONE_MACHINE, TWO_RACKS], ids=["one-machine", "two-racks"])
@pytest.mark.parametrize("kind", KINDS)
def test_collective_alone_matches_hand_computed_alpha_beta(topo_8gpu_machines, kind, shape):
    group = _group(topo_8gpu_machines, shape, kind)
    seconds = AnalyticalModel(topo_8gpu_machines).collective_seconds(group, S, kind)
    assert seconds == pytest.approx(expected_seconds(kind, shape, S), rel=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_schedules_move_the_bytes_each_kind_must(topo_8gpu_machines, kind):
    """Conservation: ring passes send (n-1)/n of the payload per rank, all-to-all (n-1)/n,
    send/recv the whole payload once."""
    group = _group(topo_8gpu_machines, TWO_RACKS, kind)
    n = group.size
    schedule = collective_schedule(kind, "ring", group, S, channels=2)
    sent = schedule.bytes_sent_per_rank()
    if kind == "send_recv":
        assert sent == [S, 0] and schedule.bytes_received_per_rank() == [0, S]
    else:
        assert sent == [S * (n - 1) // n] * n
        assert schedule.bytes_received_per_rank() == sent


def test_graph_nodes_take_their_alone_time_and_follow_dependencies(topo_8gpu_machines):
    """compute 1 ms -> all-gather -> send/recv, and an all-to-all with no deps in parallel:
    the critical path is compute + all-gather + send/recv."""
    gpus = placement_from_shape(topo_8gpu_machines, TWO_RACKS).gpus
    graph = StepGraph((
        Node(0, "compute", seconds=1e-3, group=gpus),
        Node(1, "all_gather", deps=(0,), group=gpus, nbytes=S),
        Node(2, "send_recv", deps=(1,), group=(gpus[0], gpus[8]), nbytes=S),
        Node(3, "all_to_all", group=gpus, nbytes=S),
    ))
    timing = AnalyticalModel(topo_8gpu_machines).time({"j": graph})["j"]
    ag, sr, a2a = (expected_seconds(k, TWO_RACKS, S) for k in ("all_gather", "send_recv", "all_to_all"))
    assert timing.node_seconds == pytest.approx((1e-3, ag, sr, a2a), rel=1e-9)
    assert timing.step_seconds == pytest.approx(max(1e-3 + ag + sr, a2a), rel=1e-9)
    assert timing.comm_seconds == pytest.approx(ag + sr + a2a, rel=1e-9)
