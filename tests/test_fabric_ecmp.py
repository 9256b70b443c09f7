"""The ecmp spine: individual uplink ports, the documented hash, oversubscription, symmetry.

Expected times are hand-computed from the links' figures (alpha-beta), the hash
from its documented formula (network/ecmp.py's docstring), not from the code's output."""

from __future__ import annotations

import dataclasses
import struct
import zlib
from pathlib import Path

import pytest
from fabric_helpers import NIC_GBPS, allreduce_graph, ecmp_topology

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.cache import Cached, LatencyStore
from artist.network.ecmp import ecmp_plane
from artist.network.links import path
from artist.network.symmetry import fabric_form
from artist.placement import Placement, placement_from_shape
from artist.topology import Topology, load_topology

TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"
MIB = 1 << 20


def test_hash_is_the_documented_crc32_of_rack_positions_and_channel():
    topo = ecmp_topology(racks=3, machines_per_rack=4)
    for src, dst, channel in [(0, 4, 0), (1, 9, 3), (7, 2, 1), (11, 0, 5)]:
        expected = zlib.crc32(struct.pack("<III", src % 4, dst % 4, channel)) % 4
        assert ecmp_plane(topo, src, dst, channel) == expected
        p = path(topo, src, dst, channel)
        rs, rd = src // 4, dst // 4
        assert p.links == (("nic_up", src), ("port_up", rs * 4 + expected), ("port_down", rd * 4 + expected),
                           ("nic_down", dst))


def test_port_count_is_rack_nic_capacity_over_oversubscription_and_port_speed():
    assert ecmp_topology(oversubscription=1.0).spine_ports == 4  # 4 NICs x 100 / 100
    assert ecmp_topology(oversubscription=4.0).spine_ports == 1
    assert ecmp_topology(oversubscription=2.0, port_gbps=50.0).spine_ports == 4
    with pytest.raises(InputError, match="whole number"):
        ecmp_topology(oversubscription=3.0)  # 4/3 ports
    with pytest.raises(InputError, match="unknown spine model 'fat'"):
        ecmp_topology(model="fat")


def test_single_job_crossing_a_4_to_1_spine_is_slowed_by_the_hand_computed_factor():
    # 2 racks x 2 machines x 2 GPUs, NICs and spine ports at 100 Gb/s. At 4:1 a rack has ONE port.
    # A 2-channel ring over all 8 GPUs crosses each rack boundary once per channel and direction
    # (channel 0: 3->4 and 7->0; channel 1 rotates machines: 2->5 and 6->1), so the port carries two
    # chunks per step where every NIC carries one: each of the 14 steps costs one extra chunk time.
    s = 64 * MIB
    oversubscribed = ecmp_topology(machines_per_rack=2, gpus_per_machine=2, oversubscription=4.0)
    bundle = ecmp_topology(machines_per_rack=2, gpus_per_machine=2, model="bundle")
    assert oversubscribed.spine_ports == 1
    chunk = s / 2 / 8  # per channel S/2, in 8 chunks
    extra = 14 * chunk * 8 / (NIC_GBPS * 1e9)
    times = [AnalyticalModel(t, channels=2).collective_seconds(placement_from_shape(t, [[2, 2], [2, 2]]), s)
             for t in (oversubscribed, bundle)]
    assert times[0] - times[1] == pytest.approx(extra, rel=1e-9)


def test_bundle_ignores_the_port_speed_and_ecmp_does_not():
    shape = [[1, 1], [1, 1]]
    answers = {}
    for model in ("bundle", "ecmp"):
        for port in (100.0, 25.0):
            t = ecmp_topology(model=model, machines_per_rack=2, port_gbps=port, oversubscription=0.5 * 100 / port)
            answers[model, port] = AnalyticalModel(t).collective_seconds(placement_from_shape(t, shape), 64 * MIB)
    assert answers["bundle", 100.0] == answers["bundle", 25.0]  # the bundle sees only NICs / oversubscription
    assert answers["ecmp", 25.0] > answers["ecmp", 100.0]


PARAMETERS = [(tier, field) for tier in ("machine", "rack", "spine")
              for field in ("bandwidth_bps", "link_latency_s", "switch_latency_s")]


@pytest.mark.parametrize("tier,field", PARAMETERS + [("topology", "oversubscription")])
def test_every_link_figure_of_an_ecmp_fabric_changes_some_answer(tier, field):
    # 2 racks x 4 machines x 2 GPUs at 1:1: 8 ports; the 2-channel ring's crossings take planes 0 and 4
    base = ecmp_topology(machines_per_rack=4, gpus_per_machine=2, oversubscription=1.0)
    if tier == "topology":
        changed = dataclasses.replace(base, oversubscription=4.0)
    else:
        old = getattr(base, tier)
        # bandwidths down (the NICs only quartered: the port count, NIC capacity / ratio / port speed, stays whole)
        scale = 4 if tier == "rack" else 100
        value = getattr(old, field) / scale if field == "bandwidth_bps" else getattr(old, field) * 10 + 1e-6
        changed = dataclasses.replace(base, **{tier: dataclasses.replace(old, **{field: value})})
    shape = [[2] * 4, [2] * 4]
    answers = [AnalyticalModel(t, channels=2).collective_seconds(placement_from_shape(t, shape), 64 * MIB)
               for t in (base, changed)]
    assert answers[0] != answers[1]


def test_fabric_form_renumbers_racks_in_order_and_keeps_positions():
    topo = ecmp_topology(racks=4, machines_per_rack=4)
    key, standin = fabric_form(Placement(topo, (5, 7, 13)))  # rack 1 positions 1, 3; rack 3 position 1
    assert key == ("ecmp", (1, 3), (1,))
    assert standin.gpus == (1, 3, 5)
    # a different rack pair with the same positions shares the form and the answer
    other = Placement(topo, (1, 3, 9))
    assert fabric_form(other)[0] == key
    model = AnalyticalModel(topo)
    assert model.collective_seconds(other, 8 * MIB) == model.collective_seconds(Placement(topo, (5, 7, 13)), 8 * MIB)


def test_cache_keys_on_ecmp_tell_positions_apart_and_merge_rack_renumberings(tmp_path):
    topo = ecmp_topology(racks=3, machines_per_rack=4)
    cached = Cached(AnalyticalModel(topo), LatencyStore(tmp_path / "c.sqlite"))
    a = cached.key_for({"j": allreduce_graph((0, 4), MIB)})
    same = cached.key_for({"j": allreduce_graph((4, 8), MIB)})  # racks 1, 2, same positions
    other = cached.key_for({"j": allreduce_graph((0, 6), MIB)})  # same shape, other positions
    assert a == same and a != other
    bundle = Cached(AnalyticalModel(ecmp_topology(racks=3, model="bundle")), LatencyStore(tmp_path / "b.sqlite"))
    assert bundle.key_for({"j": allreduce_graph((0, 4), MIB)}) == bundle.key_for({"j": allreduce_graph((0, 6), MIB)})


def test_bundle_topologies_keep_their_link_parameters():
    dally = load_topology(TOPOLOGIES / "dally-3tier.yaml")
    assert dally.spine_model == "bundle" and "spine.model" not in dally.link_parameters()
    assert "spine.model" in dally.with_spine_model("ecmp").link_parameters()


@pytest.mark.parametrize("ratio,ports", [(1, 32), (2, 16), (4, 8)])
def test_shipped_dally_ecmp_spines(ratio, ports):
    topo = Topology.from_yaml(TOPOLOGIES / f"dally-3tier-ecmp-{ratio}to1.yaml")
    assert topo.spine_model == "ecmp"
    assert topo.oversubscription == ratio
    # Dally paper: 64 x 400 Gb/s NICs per rack, 800 Gb/s Spectrum spine ports
    assert topo.spine_ports == 64 * 400 // (800 * ratio) == ports
    bundle = load_topology(TOPOLOGIES / "dally-3tier.yaml")
    for tier in ("machine", "rack", "spine"):
        assert topo.tier(tier).bandwidth_bps == bundle.tier(tier).bandwidth_bps
