"""Rail-optimised racks (tiers.rack.wiring: rails): NIC k of every machine on the rack's leaf of rail k.

Expected times are hand-computed from the links' figures (conftest's latencies, NICs at 400 Gb/s)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import NIC_GBPS, RACK_LINK_US, RACK_SWITCH_US, SPINE_LINK_US, SPINE_SWITCH_US, small_topology_mapping

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel, StartupLatency
from artist.network.collectives import channel_ring
from artist.network.links import path
from artist.network.symmetry import fabric_key
from artist.perf.contention import contention_components, uplink_leaves
from artist.placement import Placement, placement_from_shape
from artist.topology import Topology, load_topology

MIB = 1 << 20
NIC_BPS = NIC_GBPS * 1e9 / 8
LAT = StartupLatency()
RACK_PATH = (2 * RACK_LINK_US + RACK_SWITCH_US) * 1e-6
SPINE_PATH = (2 * RACK_LINK_US + 2 * SPINE_LINK_US + 2 * RACK_SWITCH_US + SPINE_SWITCH_US) * 1e-6


def rails_topology(oversubscription=1.0, model="bundle", **kw) -> Topology:
    data = small_topology_mapping(oversubscription=oversubscription, **kw)  # 2 racks x 2 machines x 4 GPUs
    data["tiers"]["rack"]["wiring"] = "rails"
    data["tiers"]["spine"]["model"] = model
    return Topology.from_mapping(data, "<test>")


def test_same_rail_stays_on_its_leaf_and_other_rails_go_through_the_spine():
    topo = rails_topology()
    assert topo.leaves_per_rack == 4 and [topo.leaf_of(g) for g in (0, 1, 4, 5, 8)] == [0, 1, 0, 1, 4]
    assert path(topo, 0, 4).links == (("nic_up", 0), ("nic_down", 4))  # machine 0 -> 1, rail 0
    assert path(topo, 0, 5).links == (("nic_up", 0), ("rack_up", 0), ("rack_down", 1), ("nic_down", 5))
    assert path(topo, 0, 5).latency_s == pytest.approx(SPINE_PATH)


def test_a_send_across_rails_pays_the_spine_path_and_the_leaf_uplink():
    # 4:1: a rail leaf's uplink is its 2 NICs x 400 Gb/s / 4 = 200 Gb/s, half a NIC
    topo = rails_topology(oversubscription=4.0)
    model = AnalyticalModel(topo)
    s = 64 * MIB
    same_rail = model.collective_seconds(Placement(topo, (0, 4)), s, "send_recv")
    other_rail = model.collective_seconds(Placement(topo, (0, 5)), s, "send_recv")
    assert same_rail == pytest.approx(LAT.base_s + LAT.net_step_s + RACK_PATH + s / NIC_BPS, rel=1e-9)
    assert other_rail == pytest.approx(LAT.base_s + LAT.net_step_s + SPINE_PATH + s / (NIC_BPS / 2), rel=1e-9)


def test_rings_keep_inter_machine_hops_on_one_rail():
    topo = rails_topology(racks=2, machines_per_rack=2)
    placement = placement_from_shape(topo, [[4, 4], [4, 4]])
    order = placement.ranks_in_ring_order()
    rank_of = {g: i for i, g in enumerate(order)}
    for channel in range(4):
        ring = [order[r] for r in channel_ring(placement, rank_of, channel)]
        hops = list(zip(ring, ring[1:]))  # the closing hop may change rails (PXN not modelled)
        crossing = [(a, b) for a, b in hops if topo.machine_of(a) != topo.machine_of(b)]
        assert len(crossing) == 3 and all(a % 4 == b % 4 for a, b in crossing)
        assert sorted(ring) == list(placement.gpus)


def test_rails_change_answers_that_a_single_switch_does_not():
    rails = rails_topology(oversubscription=4.0)
    switch = Topology.from_mapping(small_topology_mapping(oversubscription=4.0), "<test>")
    for topo in (rails, switch):
        model = AnalyticalModel(topo)
        a = model.collective_seconds(Placement(topo, (0, 4)), 64 * MIB, "send_recv")
        b = model.collective_seconds(Placement(topo, (0, 5)), 64 * MIB, "send_recv")
        assert (a == b) == (topo is switch)
    # the memo key tells the two apart on rails (positions kept), not on a single switch
    assert fabric_key(Placement(rails, (0, 4))) != fabric_key(Placement(rails, (0, 5)))
    assert fabric_key(Placement(switch, (0, 4))) == fabric_key(Placement(switch, (0, 5)))


def test_jobs_of_one_rack_on_common_rails_contend():
    topo = rails_topology()
    jobs = {"a": Placement(topo, (0, 5)), "b": Placement(topo, (1, 4)), "c": Placement(topo, (2, 3)),
            "d": Placement(topo, (6, 7))}
    assert uplink_leaves(jobs["a"]) == (0, 1) and uplink_leaves(jobs["c"]) == ()  # c is on one machine
    assert contention_components(jobs) == [["a", "b"], ["c"], ["d"]]


def test_bad_wiring_is_refused_and_wiring_is_key_material():
    data = small_topology_mapping()
    data["tiers"]["rack"]["wiring"] = "spaghetti"
    with pytest.raises(InputError, match=r"field 'tiers\.rack\.wiring': unknown rack wiring 'spaghetti'"):
        Topology.from_mapping(data, "<test>")
    assert rails_topology().link_parameters()["rack.wiring"] == "rails"


def test_shipped_superpod_with_rails():
    topo = load_topology(Path(__file__).resolve().parent.parent / "topologies" / "dgx-h100-rails.yaml")
    # SuperPOD RA: 8 rail leaves per SU of 32 DGX H100, 32 NDR ports up per leaf (non-blocking)
    assert topo.rails and topo.leaves_per_rack == 8 and topo.spine_model == "ecmp" and topo.spine_ports == 32
    assert topo.leaf_uplink_bps == pytest.approx(32 * 400e9)
