"""The rule that picks the ns-3 backend's path (artist/network/fastpath/rule.py), without running ns-3.

The message-level model is exact only where no link carries two transfers in flight at once; these
are the constructed cases where it would be wrong (8 channels on shared NICs, two jobs on one spine
uplink or one ECMP spine port, two collectives overlapping, the window limiting) and the boundary
cases where it must still be taken (links used one after another, the two directions of a link,
jobs on disjoint links).
"""

from __future__ import annotations

import pytest

from artist.network.ecmp import ecmp_plane
from artist.network.fastpath import MESSAGE_LEVEL, NS3
from artist.parallel.graph import Node, StepGraph
from artist.placement import placement_from_shape
from artist.topology import load_topology
from conftest import REPO, make_topology

ns3 = pytest.importorskip("artist.network.ns3")  # no ns-3 run here: only the model's rule is asked
from artist.network.ns3 import Ns3Model, Ns3Worker  # noqa: E402

DALLY = load_topology(REPO / "topologies" / "dally-3tier.yaml")
MB = 1_000_000


def model(topology=DALLY, **kw) -> Ns3Model:
    return Ns3Model(topology, worker=Ns3Worker(), **kw)  # never started: path_choice runs nothing


def collective(group, nbytes=4 * MB, kind="all_reduce", deps=()) -> list[Node]:
    return [Node(0, kind, deps=deps, group=tuple(sorted(group)), nbytes=nbytes)]


def graph(*nodes: Node) -> StepGraph:
    return StepGraph(tuple(nodes))


def gpus(shape, topology=DALLY) -> tuple[int, ...]:
    return placement_from_shape(topology, shape).gpus


def test_single_channel_ring_alone_takes_the_message_level_path():
    for shape in ([[2]], [[8]], [[1, 1]], [[8, 8]], [[4], [4]], [[3, 2, 1], [2]]):
        choice = model().path_choice({"a": graph(*collective(gpus(shape)))})
        assert choice.path == MESSAGE_LEVEL, (shape, choice.reason)


def test_eight_channels_sharing_nics_and_nvlinks_go_to_ns3():
    """NCCL-style channels rotate each machine's GPUs, so channel rings cross the same GPU links and
    NICs: the case where the message-level model was measured 21 % off."""
    for shape in ([[8, 8]], [[8], [8]], [[1, 1]]):
        choice = model(channels=8).path_choice({"a": graph(*collective(gpus(shape)))})
        assert choice.path == NS3 and "two connections" in choice.reason, (shape, choice.reason)


def test_two_channels_on_one_gpu_per_machine_share_the_nic():
    choice = model(channels=2).path_choice({"a": graph(*collective(gpus([[1, 1]])))})
    assert choice.path == NS3


def test_two_jobs_on_one_spine_uplink_go_to_ns3():
    """Bundle spine: each rack has one uplink to the spine; two jobs spanning the same two racks share it."""
    per_machine = DALLY.gpus_per_machine
    per_rack = DALLY.gpus_per_rack
    job_a = (0, per_rack)  # machine 0 of rack 0 and of rack 1
    job_b = (per_machine, per_rack + per_machine)  # machine 1 of rack 0 and of rack 1
    graphs = {"a": graph(*collective(job_a)), "b": graph(*collective(job_b))}
    choice = model().path_choice(graphs)
    assert choice.path == NS3 and "collectives 0 and 1" in choice.reason
    # each alone: message level
    for g in graphs.values():
        assert model().path_choice({"x": g}).path == MESSAGE_LEVEL


def test_two_jobs_on_one_ecmp_spine_port_go_to_ns3_and_on_two_ports_do_not():
    topo = load_topology(REPO / "topologies" / "dally-3tier-ecmp-1to1.yaml")
    per_rack = topo.gpus_per_rack
    # job a: GPU 0 (rack 0) <-> GPU per_rack (rack 1); find job b on other NICs hashing onto a's uplink
    # port (rack 0 -> 1) or onto another one, by the ECMP hash itself
    plane_a = ecmp_plane(topo, 0, per_rack)
    same = other = None
    for src in range(topo.gpus_per_machine, per_rack):  # other machines of rack 0: other NICs
        for dst in range(per_rack + topo.gpus_per_machine, 2 * per_rack):
            up, down = ecmp_plane(topo, src, dst), ecmp_plane(topo, dst, src)
            a_down = ecmp_plane(topo, per_rack, 0)
            if up == plane_a and same is None:
                same = (src, dst)
            if up != plane_a and down != a_down and other is None:
                other = (src, dst)
    assert same is not None and other is not None
    job_a = graph(*collective((0, per_rack)))
    shared = model(topo).path_choice({"a": job_a, "b": graph(*collective(same))})
    apart = model(topo).path_choice({"a": job_a, "b": graph(*collective(other))})
    assert shared.path == NS3
    assert apart.path == MESSAGE_LEVEL, apart.reason


def test_two_jobs_on_disjoint_links_take_the_message_level_path():
    a, b = gpus([[4]]), tuple(g + DALLY.gpus_per_machine for g in gpus([[4]]))
    choice = model().path_choice({"a": graph(*collective(a)), "b": graph(*collective(b))})
    assert choice.path == MESSAGE_LEVEL, choice.reason


def test_two_collectives_in_flight_at_once_go_to_ns3_and_one_after_the_other_do_not():
    group = gpus([[2, 2]])
    overlapping = graph(Node(0, "all_reduce", group=group, nbytes=MB), Node(1, "all_reduce", group=group, nbytes=MB))
    chained = graph(Node(0, "all_reduce", group=group, nbytes=MB),
                    Node(1, "all_reduce", deps=(0,), group=group, nbytes=MB))
    assert model().path_choice({"a": overlapping}).path == NS3
    assert model().path_choice({"a": chained}).path == MESSAGE_LEVEL
    # ordered through a compute node in between (a timer): still one after the other
    timed = graph(Node(0, "all_reduce", group=group, nbytes=MB), Node(1, "compute", deps=(0,), seconds=1e-3),
                  Node(2, "all_reduce", deps=(1,), group=group, nbytes=MB))
    assert model().path_choice({"a": timed}).path == MESSAGE_LEVEL


def test_ddp_step_is_a_chain_of_buckets_on_one_ring():
    from artist.parallel.ddp import ddp_step
    from artist.workload import load_models

    resnet = load_models(REPO / "workloads" / "models")["resnet50"]
    step = ddp_step(resnet, placement_from_shape(DALLY, [[8, 8], [8]]), 0.1)
    assert model().path_choice({"a": step}).path == MESSAGE_LEVEL


def test_all_to_all_shares_each_senders_links_but_two_gpus_do_not():
    assert model().path_choice({"a": graph(*collective(gpus([[3]]), kind="all_to_all"))}).path == NS3
    # two GPUs: 0 -> 1 and 1 -> 0 use the two directions of each link, which are separate queues
    assert model().path_choice({"a": graph(*collective(gpus([[2]]), kind="all_to_all"))}).path == MESSAGE_LEVEL


def test_window_that_can_limit_and_tcp_go_to_ns3():
    g = {"a": graph(*collective(gpus([[1, 1]])))}
    assert model(window_bytes=64 * 1024).path_choice(g).path == NS3  # < the NIC path's bandwidth-delay bound
    assert model(window_bytes=1 << 20).path_choice(g).path == MESSAGE_LEVEL
    assert model(transport="tcp").path_choice(g).path == NS3


def test_slower_spine_than_nic_goes_to_ns3():
    """Oversubscribed 16:1 on 2 x 4 GPUs per rack: the rack's uplink (200 Gb/s) is slower than a NIC
    (400 Gb/s), so a queue builds behind it that only the window bounds."""
    slow = make_topology(oversubscription=16.0)
    group = placement_from_shape(slow, [[1], [1]]).gpus
    choice = model(slow).path_choice({"a": graph(*collective(group))})
    assert choice.path == NS3 and "slower" in choice.reason
    fast = make_topology()
    assert model(fast).path_choice({"a": graph(*collective(placement_from_shape(fast, [[1], [1]]).gpus))}).path \
        == MESSAGE_LEVEL


def test_fast_path_off_is_the_old_identity_and_on_is_a_new_one():
    off, on = model(fast_path=False).identity(), model().identity()
    assert "fast_path" not in off  # cache keys of packet runs cached before the option existed
    assert {k: v for k, v in on.items() if k != "fast_path"} == off and on["fast_path"]["model"] == "message-level"
    assert model(fast_path=False).path_choice({"a": graph(*collective(gpus([[2]])))}).path == NS3
