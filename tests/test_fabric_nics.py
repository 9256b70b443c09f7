"""Multi-NIC machines and NIC-to-GPU affinity (tiers.rack.nics_per_machine / nic_of_gpu).

Expected times are hand-computed from the links' figures (conftest's: NICs at 400 Gb/s, NVSwitch
ports at 2400 Gb/s). "Bandwidth part" of a flow-model time: its time at 2S minus its time at S (the
start-up latencies, partly hidden behind other channels' data, are the same at both sizes)."""

from __future__ import annotations

import copy

import pytest
from conftest import NIC_GBPS, small_topology_mapping
from fabric_helpers import allreduce_graph

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel, bandwidth_seconds
from artist.network.collectives import channel_ring, ring_allreduce
from artist.network.flow import FlowModel
from artist.network.links import path
from artist.network.symmetry import fabric_key
from artist.perf.contention import contention_components
from artist.placement import Placement
from artist.topology import Topology

MIB = 1 << 20
NIC_BPS = NIC_GBPS * 1e9 / 8


def nic_topology(nics=None, nic_of_gpu=None, racks=1, machines_per_rack=2, gpus_per_machine=8, **kw) -> Topology:
    data = small_topology_mapping(racks=racks, machines_per_rack=machines_per_rack,
                                  gpus_per_machine=gpus_per_machine, **kw)
    if nics is not None:
        data["tiers"]["rack"]["nics_per_machine"] = nics
    if nic_of_gpu is not None:
        data["tiers"]["rack"]["nic_of_gpu"] = nic_of_gpu
    return Topology.from_mapping(data, "<test>")


def ring_bandwidth_by_hand(n: int, nbytes: int, nics_carrying: int) -> float:
    """2(n-1) ring steps; each moves nbytes / n per channel over every machine's NIC(s): with C channels
    spread over k NICs a NIC carries C/k chunks of nbytes / (C n), i.e. nbytes / (k n) per step."""
    return 2 * (n - 1) * nbytes / (nics_carrying * n) / NIC_BPS


# ---- the NIC a GPU uses -------------------------------------------------------
def test_default_is_one_nic_per_gpu_and_keeps_link_ids():
    topo = nic_topology()
    assert topo.nics == 8 and not topo.shared_nics
    assert path(topo, 3, 11).links == (("nic_up", 3), ("nic_down", 11))
    assert "rack.nics_per_machine" not in topo.link_parameters()  # cache keys of existing topologies kept


def test_gpu_k_uses_nic_floor_k_nics_over_gpus():
    topo = nic_topology(nics=4)
    assert [topo.nic_index(g) for g in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [topo.nic_of(g) for g in (8, 11, 15)] == [4, 5, 7]  # machine 1's NICs are 4..7
    assert path(topo, 3, 12).links == (("nic_up", 1), ("nic_down", 6))
    three = nic_topology(nics=3)  # 8 GPUs over 3 NICs: floor(k x 3 / 8)
    assert [three.nic_index(g) for g in range(8)] == [0, 0, 0, 1, 1, 1, 2, 2]


def test_an_explicit_map_moves_a_gpu_to_another_nic():
    topo = nic_topology(nics=2, nic_of_gpu=[1, 0, 1, 0, 1, 0, 1, 0])
    assert path(topo, 0, 9).links == (("nic_up", 1), ("nic_down", 2))
    assert topo.link_parameters()["rack.nic_of_gpu"] == [1, 0, 1, 0, 1, 0, 1, 0]


@pytest.mark.parametrize("rack, message", [
    ({"nics_per_machine": 9}, "nics_per_machine"),
    ({"nics_per_machine": 0}, "nics_per_machine"),
    ({"nics_per_machine": 2, "nic_of_gpu": [0, 1]}, "nic_of_gpu"),
    ({"nics_per_machine": 2, "nic_of_gpu": [0, 1, 2, 0, 1, 0, 1, 0]}, "nic_of_gpu"),
    ({"nics_per_machine": 3, "nic_of_gpu": [0, 1, 0, 1, 0, 1, 0, 1]}, "serve no GPU"),
    ({"nics_per_machine": 2, "nic_of_gpu": "0,1"}, "nic_of_gpu"),
])
def test_bad_nic_fields_are_refused_naming_the_field(rack, message):
    data = small_topology_mapping(gpus_per_machine=8)
    data["tiers"]["rack"].update(rack)
    with pytest.raises(InputError, match=message):
        Topology.from_mapping(data, "t.yaml")


# ---- bandwidth: a 2-machine ring over 1 vs 4 NICs ------------------------------
def test_ring_over_four_nics_has_a_quarter_of_the_single_nic_bandwidth_part_analytical():
    s, n = 64 * MIB, 16
    for nics, carrying in ((1, 1), (4, 4)):
        topo = nic_topology(nics=nics)
        schedule = ring_allreduce(Placement(topo, tuple(range(n))), s, channels=4)
        assert bandwidth_seconds(schedule, topo) == pytest.approx(ring_bandwidth_by_hand(n, s, carrying), rel=1e-12)


def test_ring_over_four_nics_has_a_quarter_of_the_single_nic_bandwidth_part_flow():
    s, n = 64 * MIB, 16
    for nics, carrying in ((1, 1), (2, 2), (4, 4)):
        model = FlowModel(nic_topology(nics=nics), channels=4)
        at = {x: model.time({"a": allreduce_graph(range(n), x)})["a"].step_seconds for x in (s, 2 * s)}
        assert at[2 * s] - at[s] == pytest.approx(ring_bandwidth_by_hand(n, s, carrying), rel=1e-6)


def test_channels_leave_each_machine_by_different_nics():
    topo = nic_topology(nics=4)
    placement = Placement(topo, tuple(range(16)))
    order = placement.ranks_in_ring_order()
    rank_of = {g: i for i, g in enumerate(order)}
    exits, entries = [], []
    for c in range(4):
        ring = [order[r] for r in channel_ring(placement, rank_of, c)]
        assert sorted(ring) == list(range(16))
        hop = next(i for i in range(15) if topo.machine_of(ring[i]) != topo.machine_of(ring[i + 1]))
        exits.append(topo.nic_index(ring[hop]))
        entries.append(topo.nic_index(ring[hop + 1]))
    assert sorted(exits) == [0, 1, 2, 3] and sorted(entries) == [0, 1, 2, 3]


def test_gpus_sharing_a_nic_share_its_bandwidth():
    # GPUs 0 and 1 send to machine 1 at once (one all-to-all of 2 + 2 GPUs): on one NIC each flow
    # gets half of it; moved to different NICs by the map, each gets a whole one.
    s = 64 * MIB
    group = (0, 1, 8, 9)
    times = {}
    for label, mapping in (("shared", [0, 0, 1, 1, 2, 2, 3, 3]), ("apart", [0, 1, 0, 1, 2, 2, 3, 3])):
        topo = nic_topology(nics=4, nic_of_gpu=mapping)
        times[label] = AnalyticalModel(topo).collective_seconds(Placement(topo, group), s, "all_to_all") - \
            AnalyticalModel(topo).collective_seconds(Placement(topo, group), 4, "all_to_all")
    # all-to-all of s per rank: each GPU sends s/4 to each of the 2 GPUs of the other machine
    assert times["apart"] == pytest.approx(2 * (s / 4) / NIC_BPS, rel=1e-3)
    assert times["shared"] == pytest.approx(2 * times["apart"], rel=1e-3)


# ---- symmetry, cache keys and contention components -------------------------
def test_shared_nics_keep_gpu_positions_in_the_memo_key():
    topo = nic_topology(nics=4)
    assert fabric_key(Placement(topo, (0, 1, 8, 9))) != fabric_key(Placement(topo, (0, 2, 8, 9)))
    one = nic_topology(nics=1)  # one NIC for all: GPUs of a machine stay interchangeable
    assert fabric_key(Placement(one, (0, 1, 8, 9))) == fabric_key(Placement(one, (0, 2, 8, 9)))


def test_jobs_on_one_shared_nic_are_one_contention_component():
    topo = nic_topology(nics=4)
    a, b, c = Placement(topo, (0, 8)), Placement(topo, (1, 9)), Placement(topo, (2, 10))
    assert contention_components({"a": a, "b": b, "c": c}) == [["a", "b"], ["c"]]
    own = nic_topology()
    assert contention_components({"a": Placement(own, (0, 8)), "b": Placement(own, (1, 9))}) == [["a"], ["b"]]


def test_flow_co_simulation_of_two_jobs_on_one_nic_halves_each():
    topo = nic_topology(nics=4)
    model = FlowModel(topo)
    s = 64 * MIB
    alone = {x: model.time({"a": allreduce_graph((0, 8), x)})["a"].step_seconds for x in (s, 2 * s)}
    shared = {x: model.time({"a": allreduce_graph((0, 8), x), "b": allreduce_graph((1, 9), x)}) for x in (s, 2 * s)}
    # a 2-GPU ring all-reduce: 2 steps of s/2 over GPU 0's NIC (and back over GPU 8's)
    assert alone[2 * s] - alone[s] == pytest.approx(2 * (s / 2) / NIC_BPS, rel=1e-6)
    for job in ("a", "b"):
        both = shared[2 * s][job].step_seconds - shared[s][job].step_seconds
        assert both == pytest.approx(2 * 2 * (s / 2) / NIC_BPS, rel=1e-6)


# ---- rails on NICs ----------------------------------------------------------------
def test_rails_follow_nics():
    topo = nic_topology(nics=2, racks=1, machines_per_rack=2, gpus_per_machine=4)
    data = small_topology_mapping(racks=1, machines_per_rack=2, gpus_per_machine=4)
    data["tiers"]["rack"].update(nics_per_machine=2, wiring="rails")
    rails = Topology.from_mapping(data, "<test>")
    assert rails.leaves_per_rack == 2 and [rails.leaf_of(g) for g in range(8)] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert path(rails, 1, 4).links == (("nic_up", 0), ("nic_down", 2))  # rail 0 of both machines
    assert [link[0] for link in path(rails, 0, 6).links] == ["nic_up", "rack_up", "rack_down", "nic_down"]
    assert path(topo, 0, 6).links == (("nic_up", 0), ("nic_down", 3))  # one switch: no spine


# ---- every bandwidth and latency field changes some answer --------------------
def _field_base() -> dict:
    # 2 racks x 2 machines x 4 GPUs, 2 NICs per machine, 200 Gb/s ecmp spine ports (slower than a
    # NIC, so a rack-crossing flow is port-limited), 1:1: 2 x 2 x 400 / 200 = 8 ports per rack.
    data = small_topology_mapping(racks=2, machines_per_rack=2, gpus_per_machine=4)
    data["tiers"]["rack"]["nics_per_machine"] = 2
    data["tiers"]["spine"].update(bandwidth_gbps=200.0, model="ecmp")
    return data


FIELD_CHANGES = [(f"{tier}.{key}", factor) for tier in ("machine", "rack", "spine")
                 for key, factor in (("bandwidth_gbps", 0.5), ("link_latency_us", 3.0), ("switch_latency_us", 3.0))]
FIELD_CHANGES += [("spine.oversubscription", 2.0), ("rack.nics_per_machine", 4), ("rack.nic_of_gpu", [0, 1, 0, 1])]


def _answers(topo: Topology, backend: str) -> list[float]:
    """Probes that cross each tier (one channel): a send inside a machine, across machines, across
    racks; all-to-alls of 4 GPUs on 2 machines and of all 16 GPUs; and an 8-channel all-reduce over
    both racks (8 ECMP-hashed flows per direction)."""
    probes = [((0, 1), "send_recv", 1), ((0, 4), "send_recv", 1), ((0, 8), "send_recv", 1),
              ((0, 1, 4, 5), "all_to_all", 1), (tuple(range(16)), "all_to_all", 1),
              (tuple(range(16)), "all_reduce", 8)]
    if backend == "analytical":
        return [AnalyticalModel(topo, channels=c).collective_seconds(Placement(topo, g), 8 * MIB, kind)
                for g, kind, c in probes]
    from artist.parallel.graph import Node, StepGraph

    graphs = [(c, StepGraph((Node(0, kind, group=g, nbytes=8 * MIB),))) for g, kind, c in probes]
    return [FlowModel(topo, channels=c).time({"p": graph})["p"].step_seconds for c, graph in graphs]


@pytest.mark.parametrize("backend", ["analytical", "flow"])
@pytest.mark.parametrize("field, change", FIELD_CHANGES, ids=[f for f, _ in FIELD_CHANGES])
def test_every_topology_field_changes_some_answer(field, change, backend):
    base = _field_base()
    changed = copy.deepcopy(base)
    tier, key = field.split(".")
    target = changed["tiers"][tier]
    target[key] = change if isinstance(change, list) or key == "nics_per_machine" else target[key] * change
    before = _answers(Topology.from_mapping(base, "<base>"), backend)
    after = _answers(Topology.from_mapping(changed, "<changed>"), backend)
    assert any(abs(a - b) > 1e-9 * b for a, b in zip(after, before)), f"{field} changed no answer"


def test_ns3_ring_over_two_nics_has_half_the_single_nic_bandwidth_part():
    pytest.importorskip("ns3")
    from artist.network.ns3 import Ns3Model

    s, n = 8 * MIB, 4  # 2 machines x 2 GPUs, 2 channels: 2 NICs carry one channel each, 1 NIC both
    for nics in (1, 2):
        model = Ns3Model(nic_topology(nics=nics, gpus_per_machine=2), channels=2)
        at = {x: model.time({"a": allreduce_graph(range(n), x)})["a"].step_seconds for x in (s, 2 * s)}
        # packets carry 16-byte headers in 9000-byte frames and acks: a little over the fluid figure
        assert at[2 * s] - at[s] == pytest.approx(ring_bandwidth_by_hand(n, s, nics), rel=0.02)


def test_ns3_two_jobs_on_one_shared_nic_take_twice_the_bandwidth_time_as_flow_does():
    pytest.importorskip("ns3")
    from artist.network.ns3 import Ns3Model

    topo = nic_topology(nics=1, gpus_per_machine=2)  # GPUs 0, 1 on machine 0's only NIC; 2, 3 on machine 1's
    s = 8 * MIB
    ns3 = Ns3Model(topo)
    alone = {x: ns3.time({"a": allreduce_graph((0, 2), x)})["a"].step_seconds for x in (s, 2 * s)}
    shared = {x: ns3.time({"a": allreduce_graph((0, 2), x), "b": allreduce_graph((1, 3), x)}) for x in (s, 2 * s)}
    assert alone[2 * s] - alone[s] == pytest.approx(2 * (s / 2) / NIC_BPS, rel=0.02)
    flow = FlowModel(topo).time({"a": allreduce_graph((0, 2), s), "b": allreduce_graph((1, 3), s)})
    for job in ("a", "b"):
        both = shared[2 * s][job].step_seconds - shared[s][job].step_seconds
        assert both == pytest.approx(2 * 2 * (s / 2) / NIC_BPS, rel=0.03)
        assert shared[s][job].step_seconds == pytest.approx(flow[job].step_seconds, rel=0.03)
