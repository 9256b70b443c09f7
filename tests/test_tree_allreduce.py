"""NCCL's Tree all-reduce as a schedule (artist/network/tree.py): the trees against NCCL's own illustrations
(src/graph/trees.cc), the schedule against conservation of bytes, the analytical time against hand-computed
α-β sums, and the flow and ns-3 backends executing it."""

from __future__ import annotations

from collections import defaultdict

import pytest

from artist.network.analytical import AnalyticalModel
from artist.network.collectives import allreduce_schedule
from artist.network.tree import TREE_CHUNK_BYTES, channel_trees, node_btree, node_dtree, tree_allreduce
from artist.placement import Placement, placement_from_shape
from conftest import NIC_GBPS, RACK_LINK_US, RACK_SWITCH_US, make_topology

NET_STEP, BASE = 14.0e-6, 8.4e-6  # NCCL's NET hop and base latencies (StartupLatency's defaults)
NIC_BYTES_PER_S = NIC_GBPS * 1e9 / 8
NET_PATH = (2 * RACK_LINK_US + RACK_SWITCH_US) * 1e-6
CHUNK = 512 * 1024


def _tree_of(n: int, tree: int = 0) -> dict[int, tuple[int, tuple[int, ...]]]:
    return {r: node_dtree(n, r, tree)[:2] for r in range(n)}


def test_the_binary_tree_is_nccls_illustration_of_fourteen_ranks():
    # trees.cc: 0 - 8; 8 - 4, 12; 4 - 2, 6; 12 - 10, 13; 2 - 1, 3; 6 - 5, 7; 10 - 9, 11
    children = {0: (8,), 8: (4, 12), 4: (2, 6), 12: (10, 13), 2: (1, 3), 6: (5, 7), 10: (9, 11)}
    for r, (up, down) in _tree_of(14).items():
        assert down == children.get(r, ()), r
        assert up == next((p for p, cs in children.items() if r in cs), -1), r
    assert node_btree(14, 4)[2] == 0 and node_btree(14, 12)[2] == 1  # below / above the parent


def test_the_second_tree_is_mirrored_for_even_and_shifted_for_odd_counts():
    # trees.cc's pictures: 12 ranks, root 11 - 3; 3 - 1, 7; 7 - 5, 9; 1 - 0, 2 ...
    mirrored = _tree_of(12, tree=1)
    assert mirrored[11] == (-1, (3,)) and set(mirrored[3][1]) == {1, 7} and set(mirrored[7][1]) == {5, 9}
    # 13 ranks, root 1 - 9; 9 - 5, 0; 5 - 3, 7; 0 - 11 ...
    shifted = _tree_of(13, tree=1)
    assert shifted[1] == (-1, (9,)) and set(shifted[9][1]) == {5, 0} and set(shifted[0][1]) == {11}


@pytest.mark.parametrize("n", range(2, 34))
def test_no_machine_is_inside_both_trees(n):
    """The point of the double tree: a machine that forwards in one tree is a leaf of the other, so its NIC
    carries one tree's fan-in, not two; with an odd count the shift leaves machine 0 (tree 0's root, one
    child) inside both."""
    inner = [{r for r, (_, down) in _tree_of(n, t).items() if down} for t in (0, 1)]
    assert inner[0] & inner[1] == (set() if n % 2 == 0 else {0})
    for t in (0, 1):  # and each is one tree over every rank
        tree = _tree_of(n, t)
        assert sum(up == -1 for up, _ in tree.values()) == 1
        assert sorted(c for _, down in tree.values() for c in down) == sorted(r for r, (up, _) in tree.items()
                                                                              if up != -1)


def test_the_balanced_pattern_puts_the_first_child_machine_on_the_second_gpu():
    topology = make_topology(racks=1, machines_per_rack=4, gpus_per_machine=2)
    placement = placement_from_shape(topology, [[2, 2, 2, 2]])
    tree = channel_trees(placement, 1)[0]
    order = placement.ranks_in_ring_order()
    rank = {g: i for i, g in enumerate(order)}
    head = [rank[2 * m] for m in range(4)]  # each machine's chain starts at its first GPU (channel 0)
    second = [rank[2 * m + 1] for m in range(4)]
    # machines 0..3: 0 is the root with child 2; 2's children are 1 (below it: child type 0) and 3 (type 1)
    assert tree.parent[head[0]] == -1 and tree.parent[head[2]] == head[0]
    assert tree.parent[head[1]] == second[2] and tree.parent[head[3]] == head[2]
    assert tree.parent[second[2]] == head[2]  # the chain inside the machine


@pytest.mark.parametrize("shape, channels", [([[1, 1, 1]], 1), ([[4, 4]], 2), ([[2, 2], [2]], 3), ([[4], [4]], 4)])
def test_every_rank_sends_and_receives_its_share_once_per_phase(shape, channels):
    topology = make_topology(machines_per_rack=4)
    placement = placement_from_shape(topology, shape)
    nbytes = 3 * CHUNK * channels + 12345
    schedule = tree_allreduce(placement, nbytes, channels)
    shares = [nbytes // channels + (1 if c < nbytes % channels else 0) for c in range(channels)]
    for c, tree in enumerate(channel_trees(placement, channels)):
        sent, received = defaultdict(int), defaultdict(int)
        for t in schedule.transfers:
            if t.channel == c:
                sent[t.src] += t.nbytes
                received[t.dst] += t.nbytes
        for r in range(placement.size):
            fan = len(tree.children[r])
            up = 0 if r == tree.root else 1
            assert sent[r] == shares[c] * (up + fan)  # its reduced chunks up once, every chunk down to each child
            assert received[r] == shares[c] * (fan + up)  # every child's chunks, then the result from above
    for t in schedule.transfers:  # a transfer waits only for transfers that end at its sender
        assert all(schedule.transfers[d].dst == t.src for d in t.deps)


def test_chunks_are_nccls_simple_steps():
    placement = placement_from_shape(make_topology(), [[1, 1]])
    schedule = tree_allreduce(placement, 4 * TREE_CHUNK_BYTES + 1, 1)
    assert TREE_CHUNK_BYTES == CHUNK and len(schedule.transfers) == 2 * 5  # 5 chunks up, 5 down
    assert allreduce_schedule("tree", placement, 1 << 20).algorithm == "tree"


def test_two_machines_hand_computed():
    # One GPU on each of two machines, one channel, 4 MiB: 8 chunks of 512 KiB go up at steps 0..7 and
    # come down at steps 1..8, on opposite directions of the NICs: 9 steps of one chunk over 50 GB/s, and one
    # chunk's latency path is one NIC hop up and one down.
    placement = placement_from_shape(make_topology(), [[1, 1]])
    expected = BASE + 2 * (NET_STEP + NET_PATH) + 9 * CHUNK / NIC_BYTES_PER_S
    model = AnalyticalModel(placement.topology, algorithm="tree")
    assert model.collective_seconds(placement, 8 * CHUNK) == pytest.approx(expected, rel=1e-12)


def test_three_machines_hand_computed():
    # Machines 0, 1, 2 (one GPU each): the tree is 0 - 2 - 1 (2 is 0's only child, 1 is 2's). Up: 1 -> 2 at
    # steps k, 2 -> 0 at k + 1; down: 0 -> 2 at k + 2, 2 -> 1 at k + 3 (k = 0..7). Machine 2's NIC carries two
    # chunks a step in each direction while both of its links are busy: steps 2..8 cost two chunks, steps
    # 0, 1, 9, 10 one: 18 chunk-times over 50 GB/s; latency 2 NIC hops up and 2 down.
    placement = placement_from_shape(make_topology(racks=1, machines_per_rack=4), [[1, 1, 1]])
    expected = BASE + 4 * (NET_STEP + NET_PATH) + 18 * CHUNK / NIC_BYTES_PER_S
    model = AnalyticalModel(placement.topology, algorithm="tree")
    assert model.collective_seconds(placement, 8 * CHUNK) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("shape, channels", [([[4, 4]], 2), ([[1, 1, 1, 1]], 1), ([[4, 2], [4]], 3)])
def test_the_analytical_time_of_many_chunks_is_the_schedule_summed(shape, channels):
    """The analytical model sums the pipeline's steps from two chunk counts (the pipeline's full middle
    repeats); the schedule of that many chunks, summed step by step, gives the same time."""
    from artist.network.analytical import bandwidth_seconds

    topology = make_topology(racks=2, machines_per_rack=4, gpus_per_machine=4)
    placement = placement_from_shape(topology, shape)
    model = AnalyticalModel(topology, algorithm="tree", channels=channels)
    collective = model._linear(placement, "all_reduce")
    for chunks in (1, 3, collective.full + 7, 60):
        nbytes = chunks * CHUNK * channels
        direct = collective.fixed + bandwidth_seconds(tree_allreduce(placement, nbytes, channels, False), topology)
        assert model.collective_seconds(placement, nbytes) == pytest.approx(direct, rel=1e-9), chunks


def test_flow_and_ns3_execute_the_tree_between_its_bound_and_the_lock_step_time():
    """A 2 x 4-GPU tree of 16 MiB on two channels: each machine's first NIC carries the whole payload in each
    direction (both channels' chains start on the same GPU), so no backend can beat S / NIC rate; the
    engines' pipelines overlap what the analytical lock-step sums, so they finish no later than it (+1 %).
    Measured: analytical 0.469 ms, flow 0.433, ns-3 0.443; the bound 0.336."""
    pytest.importorskip("artist.network.ns3")
    from artist.network.flow import FlowModel
    from artist.network.ns3 import Ns3Model
    from artist.parallel.graph import Node, StepGraph

    topology = make_topology(gpus_per_machine=4)
    placement = placement_from_shape(topology, [[4, 4]])
    nbytes = 16 << 20
    bound = nbytes / NIC_BYTES_PER_S
    lock_step = AnalyticalModel(topology, algorithm="tree", channels=2).collective_seconds(placement, nbytes)
    graph = {"j": StepGraph((Node(0, "all_reduce", group=placement.gpus, nbytes=nbytes),))}
    for model in (FlowModel(topology, algorithm="tree", channels=2), Ns3Model(topology, algorithm="tree", channels=2)):
        seconds = model.time(graph)["j"].node_seconds[0]
        assert bound < seconds <= lock_step * 1.01, (model.name, seconds, bound, lock_step)


def test_a_one_gpu_group_has_no_transfers():
    placement = Placement(make_topology(), (3,))
    assert len(tree_allreduce(placement, 1 << 20, 2).transfers) == 0
    assert AnalyticalModel(placement.topology, algorithm="tree").collective_seconds(placement, 1 << 20) == 0.0


def test_the_phase_contention_model_refuses_trees_everywhere(tmp_path, capsys):
    """The phase model is measured on rings; on trees its slowdowns are up to 60 % off the per-transfer flow
    engine's (benchmarks/contention_accuracy.py --algorithm tree): shared contention with trees must
    co-simulate, and says so in one line wherever it is asked for."""
    from artist.cli import main
    from artist.errors import InputError
    from artist.network.flow import FlowModel
    from artist.network.phase import PhaseContention
    from artist.sweep.spec import load_sweep_spec

    topology = make_topology()
    with pytest.raises(ValueError, match="contention_model cosim"):
        PhaseContention(FlowModel(topology, algorithm="tree"))
    PhaseContention(FlowModel(topology, algorithm="ring"))
    base = {"name": "t", "topology": "dally-3tier", "racks": [1], "policies": ["fifo"],
            "workloads": ["batch:n=3,gpus=8|16,min_iter=50,max_iter=100"], "comm": {"backend": "flow",
                                                                                    "algorithm": "tree"}}
    with pytest.raises(InputError, match="simulator.contention_model"):
        load_sweep_spec(tmp_path / "t.yaml", data={**base, "simulator": {"contention": "shared"}})
    assert load_sweep_spec(tmp_path / "t.yaml", data={**base, "simulator": {"contention": "shared",
                                                                            "contention_model": "cosim"}}).runs
    assert load_sweep_spec(tmp_path / "t.yaml", data=base).runs  # isolated: no contention model asked
    with pytest.raises(InputError, match="elastic.contention"):
        load_sweep_spec(tmp_path / "t.yaml", data={**base, "topology": "pollux-t4", "racks": [1],
                                                   "policies": ["pollux"], "workloads": ["poisson:n=3"],
                                                   "elastic": {"contention": "shared"}})
    code = main(["simulate", "--topology", "dally-3tier", "--racks", "1", "--workload", "batch:n=3,gpus=8",
                 "--policy", "fifo", "--backend", "flow", "--algorithm", "tree", "--contention", "shared",
                 "--quiet", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "--contention-model" in err and "cosim" in err
