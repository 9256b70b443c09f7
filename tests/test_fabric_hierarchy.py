"""Switch levels above the spine (topology `levels`, artist/hierarchy.py), and the Lingjun cluster.

Expected routes, capacities and times are written out from the figures (alpha-beta, the documented
hash of network/ecmp.py), not read back from the code."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from conftest import small_topology_mapping
from fabric_helpers import allreduce_graph

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.flow import FlowModel
from artist.network.links import link_bandwidth_bps, path
from artist.network.symmetry import fabric_form
from artist.perf.contention import contention_components
from artist.placement import Placement
from artist.topology import Topology, load_topology

TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"
MIB = 1 << 20
GBPS = 100.0  # NICs and every port at one speed: one flow fills one port
BPS = GBPS * 1e9
US = 1e-6


def level(name, oversubscription=1.0, model="ecmp", group=None, link_us=1.0, switch_us=2.0):
    entry = {"name": name, "bandwidth_gbps": GBPS, "link_latency_us": link_us, "switch_latency_us": switch_us,
             "oversubscription": oversubscription, "model": model, "source": "test figures"}
    return entry | ({"group": group} if group else {})


def deep_mapping(racks=4, machines_per_rack=2, spine_group=2, levels=None, spine_model="ecmp"):
    """Racks of `machines_per_rack` 1-GPU machines, 100 Gb/s NICs and ports; the spine groups
    `spine_group` racks per block; `levels` above it (default: one ECMP core at 4:1)."""
    data = small_topology_mapping(racks=racks, machines_per_rack=machines_per_rack, gpus_per_machine=1)
    data["tiers"]["rack"]["bandwidth_gbps"] = GBPS
    data["tiers"]["spine"].update(bandwidth_gbps=GBPS, model=spine_model, group=spine_group)
    data["levels"] = levels if levels is not None else [level("core", oversubscription=4.0)]
    return data


def deep(**kw) -> Topology:
    return Topology.from_mapping(deep_mapping(**kw), "<test>")


def crc_port(src, dst, channel, level_no, per_rack, ports):
    """ecmp.py's documented hash: level 1 without the level field, levels >= 2 with it."""
    fields = (src % per_rack, dst % per_rack, channel) + ((level_no,) if level_no > 1 else ())
    return zlib.crc32(struct.pack("<" + "I" * len(fields), *fields)) % ports


# ---- ports and capacities per level ---------------------------------------------------------------
def test_ports_per_level_are_downstream_capacity_over_oversubscription_and_port_speed():
    # a rack: 2 NICs x 100 Gb/s, 1:1 -> 2 spine ports; a spine block: 2 racks x 200 Gb/s = 400 Gb/s of
    # downstream capacity into the core: at 4:1 one 100 Gb/s port, at 2:1 two, at 1:1 four
    for ratio, ports in ((4.0, 1), (2.0, 2), (1.0, 4)):
        topo = deep(levels=[level("core", oversubscription=ratio)])
        assert topo.level_ports(1) == 2
        assert topo.level_ports(2) == ports
    with pytest.raises(InputError, match=r"field 'levels'.*'core'.*1\.33333"):
        deep(levels=[level("core", oversubscription=3.0)])  # 400 / 300: not a whole number of ports


def test_bundle_level_capacity_is_its_blocks_downstream_capacity_over_oversubscription():
    # three levels: racks (2 x 100 Gb/s) -> spine blocks of 2 racks -> agg blocks of 2 spine blocks -> core
    topo = deep(racks=8, levels=[level("agg", 2.0, "bundle", group=2), level("core", 4.0, "bundle")])
    # spine block: 2 racks x 200 = 400 Gb/s, over 2:1 -> 200 Gb/s into agg; agg block: 2 x 200 = 400, over
    # 4:1 -> 100 Gb/s into the core
    gpu_a, gpu_b = 0, 8  # rack 0 (agg block 0) and rack 4 (agg block 1)
    p = path(topo, gpu_a, gpu_b)
    kinds = [k for k, _ in p.links]
    assert kinds == ["nic_up", "port_up", "agg_up", "core_up", "core_down", "agg_down", "port_down", "nic_down"]
    caps = {k: link_bandwidth_bps(topo, link) for link, k in zip(p.links, kinds)}
    assert caps["agg_up"] == caps["agg_down"] == 200e9
    assert caps["core_up"] == caps["core_down"] == 100e9
    assert p.links[2] == ("agg_up", 0) and p.links[5] == ("agg_down", 2)  # spine blocks 0 and 2
    assert p.links[3] == ("core_up", 0) and p.links[4] == ("core_down", 1)  # agg blocks 0 and 1


# ---- routes -------------------------------------------------------------------------------------
def test_routes_climb_only_to_the_lowest_common_block():
    topo = deep()  # racks 0, 1 in spine block 0; racks 2, 3 in block 1; the core on top
    links = {"rack": 0.01, "spine": 0.15, "core": 1.0}  # conftest's link latencies (µs) and the core's
    switch = {"rack": 0.13, "spine": 0.5, "core": 2.0}
    # one rack: NICs and the ToR only
    same_rack = path(topo, 0, 1)
    assert same_rack.links == (("nic_up", 0), ("nic_down", 1))
    assert same_rack.latency_s == pytest.approx((2 * links["rack"] + switch["rack"]) * US, rel=1e-12)
    # two racks of one spine block: up to the spine and down, never the core
    k = crc_port(0, 2, 0, 1, per_rack=2, ports=2)
    one_block = path(topo, 0, 2)
    assert one_block.links == (("nic_up", 0), ("port_up", 0 * 2 + k), ("port_down", 1 * 2 + k), ("nic_down", 2))
    assert one_block.latency_s == pytest.approx(
        (2 * links["rack"] + 2 * links["spine"] + 2 * switch["rack"] + switch["spine"]) * US, rel=1e-12)
    # two spine blocks: through the core's one port per block (4:1)
    k1 = crc_port(0, 4, 3, 1, per_rack=2, ports=2)
    cross = path(topo, 0, 4, channel=3)
    assert cross.links == (("nic_up", 0), ("port_up", k1), ("core_port_up", 0), ("core_port_down", 1),
                           ("port_down", 2 * 2 + k1), ("nic_down", 4))
    assert cross.latency_s == pytest.approx(
        (2 * links["rack"] + 2 * links["spine"] + 2 * links["core"]
         + 2 * switch["rack"] + 2 * switch["spine"] + switch["core"]) * US, rel=1e-12)


def test_level_hash_is_the_documented_crc32_with_the_level():
    topo = deep(levels=[level("core", oversubscription=1.0)])  # 4 core ports per spine block
    for src, dst, channel in [(0, 4, 0), (1, 6, 2), (3, 5, 7), (7, 0, 1)]:
        k1 = crc_port(src, dst, channel, 1, per_rack=2, ports=2)
        k2 = crc_port(src, dst, channel, 2, per_rack=2, ports=4)
        bs, bd = src // 4, dst // 4
        assert path(topo, src, dst, channel).links[1:5] == (
            ("port_up", (src // 2) * 2 + k1), ("core_port_up", bs * 4 + k2), ("core_port_down", bd * 4 + k2),
            ("port_down", (dst // 2) * 2 + k1))


# ---- timing ---------------------------------------------------------------------------------------
def test_two_rings_through_one_oversubscribed_core_port_halve_each_other_on_the_flow_backend():
    # core at 4:1: one 100 Gb/s port per spine block. Jobs a = GPUs 0, 4 and b = 1, 5 each join spine
    # block 0 to block 1, so both rings cross that one port each way; each NIC carries one flow.
    topo = deep()
    a, b, s = (0, 4), (1, 5), 64 * MIB
    model = FlowModel(topo)
    latency = model.time({"a": allreduce_graph(a, 2)})["a"].step_seconds  # 1 byte per chunk: latencies only
    alone = model.time({"a": allreduce_graph(a, s)})["a"].step_seconds
    shared = model.time({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
    bandwidth_alone = 2 * (s / 2) * 8 / BPS  # a 2-rank ring: 2 steps of S/2 at the NIC (= port) rate
    assert alone - latency == pytest.approx(bandwidth_alone, rel=1e-3)
    for job in ("a", "b"):
        assert (shared[job].step_seconds - latency) / bandwidth_alone == pytest.approx(2.0, rel=0.01)


def test_two_rings_through_one_oversubscribed_core_port_halve_each_other_in_the_phase_model():
    # the same two jobs, timed in steady state by the phase contention model (network/phase/): their
    # bandwidth parts share the core port, so each step takes its alone time plus one more bandwidth part
    from artist.network.phase import PhaseContention

    topo = deep()
    a, b, s = (0, 4), (1, 5), 64 * MIB
    got = PhaseContention(FlowModel(topo)).steady({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
    bandwidth_alone = 2 * (s / 2) * 8 / BPS
    for job in ("a", "b"):
        added = got[job].shared.step_seconds - got[job].alone.step_seconds
        assert added == pytest.approx(bandwidth_alone, rel=0.01)


def test_analytical_time_across_the_core_is_the_hand_computed_alpha_beta():
    topo = deep()
    s = 64 * MIB
    # 2-rank ring all-reduce: base 8.4 µs + 2 hops of (NET 14 µs + the core path's latency) + 2 x S/2 / 100 Gb/s
    path_s = (2 * 0.01 + 2 * 0.15 + 2 * 1.0 + 2 * 0.13 + 2 * 0.5 + 2.0) * US
    expected = 8.4e-6 + 2 * (14e-6 + path_s) + 2 * (s / 2) * 8 / BPS
    got = AnalyticalModel(topo).collective_seconds(Placement(topo, (0, 4)), s)
    assert got == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("field", ["bandwidth_gbps", "link_latency_us", "switch_latency_us", "oversubscription"])
def test_every_figure_of_an_upper_level_changes_some_answer(field):
    # a bundle spine (no hash collision below the core); the core's ECMP ports, or for the ratio a bundle
    # (a spine block's 400 Gb/s at 8:1 is 50 Gb/s, below the one NIC a ring crossing uses)
    s = 64 * MIB
    core = level("core", oversubscription=1.0, model="bundle" if field == "oversubscription" else "ecmp")
    value = {"bandwidth_gbps": 25.0, "link_latency_us": 5.0, "switch_latency_us": 9.0, "oversubscription": 8.0}
    base = deep(levels=[core], spine_model="bundle")
    changed = deep(levels=[core | {field: value[field]}], spine_model="bundle")
    shape = (0, 1, 4, 5)  # racks 0 and 2 (2 GPUs each), in spine blocks 0 and 1: the ring crosses the core
    model = {t: AnalyticalModel(t, channels=2) for t in (base, changed)}
    assert model[base].collective_seconds(Placement(base, shape), s) != \
        model[changed].collective_seconds(Placement(changed, shape), s)


def test_a_flat_file_in_the_membership_form_gives_exactly_the_old_answers(tmp_path):
    flat_path = TOPOLOGIES / "dally-3tier-ecmp-2to1.yaml"
    flat = load_topology(flat_path, racks=4)
    csv = tmp_path / "switches.csv"
    csv.write_text("name,level,parent\nspine0,spine,\n" + "".join(f"r{r},rack,spine0\n" for r in range(4)))
    text = flat_path.read_text().replace("racks: 2\n", "racks: 4\nswitches: switches.csv\n")
    (tmp_path / "t.yaml").write_text(text)
    member = load_topology(tmp_path / "t.yaml")
    assert member.hierarchy is not None and member.racks == 4
    for src, dst, channel in [(0, 70, 0), (5, 200, 1), (130, 3, 2), (64, 255, 3), (8, 9, 0), (0, 1, 0)]:
        assert path(member, src, dst, channel) == path(flat, src, dst, channel)
    for gpus in [(0, 64), tuple(range(0, 256, 16)), (3, 67, 131, 195)]:
        times = [AnalyticalModel(t, channels=2).collective_seconds(Placement(t, gpus), 96 * MIB)
                 for t in (flat, member)]
        assert times[0] == times[1]


# ---- symmetry (cache keys) and contention ---------------------------------------------------------
def test_fabric_form_renumbers_inside_blocks_and_never_merges_across_them():
    topo = deep(racks=8, levels=[level("agg", 1.0, "ecmp", group=2), level("core", 1.0, "bundle")])
    # racks: spine blocks {0,1} {2,3} {4,5} {6,7}; agg blocks {0,1} {2,3} of spine blocks
    a = Placement(topo, (4, 6))  # racks 2 and 3: one spine block (block 1, agg block 0)
    b = Placement(topo, (12, 14))  # racks 6 and 7: one spine block (block 3, agg block 1)
    c = Placement(topo, (4, 8))  # racks 2 and 4: different agg blocks: crosses the core
    assert fabric_form(a)[0] == fabric_form(b)[0]
    assert fabric_form(a)[1].gpus == (0, 2)  # racks 0 and 1, positions kept
    assert fabric_form(c)[0] != fabric_form(a)[0]
    assert fabric_form(c)[1].gpus == (0, 8)  # racks 0 and 4: first spine block of agg blocks 0 and 1
    model = AnalyticalModel(topo)
    assert model.collective_seconds(a, 8 * MIB) == model.collective_seconds(b, 8 * MIB)
    assert model.collective_seconds(c, 8 * MIB) > model.collective_seconds(a, 8 * MIB)


def test_jobs_crossing_the_core_through_common_blocks_share_a_component_without_a_common_rack():
    topo = deep(racks=8)  # spine blocks {0,1} {2,3} {4,5} {6,7}
    jobs = {
        "x": Placement(topo, (0, 4)),  # racks 0, 2: spine blocks 0, 1: through the core
        "y": Placement(topo, (3, 9)),  # racks 1, 4: spine blocks 0, 2: through the core, no rack shared with x
        "z": Placement(topo, (12, 14)),  # racks 6, 7: inside spine block 3
        "w": Placement(topo, (5, 11)),  # racks 2, 5: spine blocks 1, 2: shares block 1 with x, 2 with y
    }
    assert contention_components(jobs) == [["x", "y", "w"], ["z"]]


# ---- the Lingjun cluster ----------------------------------------------------------------------------
# Counted from alibaba/alibaba-lingjun-dataset-2023 data/topo.csv (commit 2ad3fd1): 847 hosts, one DSW,
# PSWs P8 / P10 / P12 over 29 / 48 / 42 (PSW, ASW) ToRs; 8 hosts per ToR and 8 GPUs per host are the
# file's stated assumptions.
LINGJUN_TORS = {"P8": 29, "P10": 48, "P12": 42}


def test_lingjun_sizes_and_membership():
    topo = load_topology(TOPOLOGIES / "lingjun.yaml")
    assert topo.racks == sum(LINGJUN_TORS.values()) == 119
    assert topo.gpus == 119 * 8 * 8 == 7616
    assert topo.hierarchy.names[1] == ("P8", "P10", "P12")
    rows = (TOPOLOGIES / "lingjun-switches.csv").read_text().splitlines()[1:]
    assert sum(row.split(",")[1] == "host" for row in rows) == 847
    firsts = {"P8": 0, "P10": 29, "P12": 29 + 48}
    for psw, first in firsts.items():
        assert [topo.hierarchy.block(r, 1) for r in range(first, first + LINGJUN_TORS[psw])] == \
            [list(firsts).index(psw)] * LINGJUN_TORS[psw]
    assert topo.level_ports(1) == 8 * 8 * 400 // 400  # 64 NICs x 400 Gb/s over 400 Gb/s ports at 1:1


def test_lingjun_job_spanning_two_psws_crosses_the_core_and_one_tor_never_leaves_it():
    topo = load_topology(TOPOLOGIES / "lingjun.yaml")
    per_rack = 64
    src, dst = 0, 29 * per_rack  # rack 0 (P8-S1) -> rack 29 (P10-S1)
    k = crc_port(src, dst, 0, 1, per_rack=per_rack, ports=64)
    p = path(topo, src, dst)
    assert p.links == (("nic_up", 0), ("port_up", 0 * 64 + k), ("core_up", 0), ("core_down", 1),
                       ("port_down", 29 * 64 + k), ("nic_down", dst))
    # the core bundle of P8: its 29 ToRs x 64 NICs x 400 Gb/s at 1:1
    assert link_bandwidth_bps(topo, ("core_up", 0)) == 29 * 64 * 400e9
    assert p.latency_s == pytest.approx((2 * 0.01 + 2 * 0.25 + 2 * 0.5 + 2 * 0.6 + 2 * 1.0 + 1.0) * US, rel=1e-12)
    # two ToRs of P8: up to the PSW only
    assert [k for k, _ in path(topo, 0, per_rack).links] == ["nic_up", "port_up", "port_down", "nic_down"]
    # one ToR, two hosts: the ToR only
    assert path(topo, 0, 8).links == (("nic_up", 0), ("nic_down", 8))


def test_lingjun_cut_to_fewer_racks_keeps_the_real_membership_of_those_racks():
    topo = load_topology(TOPOLOGIES / "lingjun.yaml", racks=31)  # P8's 29 ToRs and P10's first 2
    assert topo.gpus == 31 * 64
    assert link_bandwidth_bps(topo, ("core_up", 1)) == 2 * 64 * 400e9  # P10 block: 2 ToRs left
    assert fabric_form(Placement(topo, (0, 29 * 64)))[1].gpus == (0, 29 * 64)  # explicit: nothing renumbered
    with pytest.raises(ValueError, match="lists 119 racks"):
        topo.with_racks(120)


def test_regular_racks_must_fill_whole_blocks():
    with pytest.raises(InputError, match=r"field 'racks'.*whole blocks"):
        deep(racks=5)
    with pytest.raises(ValueError, match="whole blocks"):
        deep(racks=4).with_racks(3)
    assert deep(racks=4).with_racks(6).racks == 6  # three whole spine blocks


# ---- ns-3 on a 4-level fabric (GPU -> NVSwitch, NIC -> ToR, ToR -> spine block, block -> core) --------
@pytest.mark.ns3
def test_ns3_times_a_transfer_across_the_core_as_the_wire_and_the_flow_backend_do():
    ns3 = pytest.importorskip("artist.network.ns3")
    from artist.network.analytical import StartupLatency
    from artist.network.collectives import Schedule, Transfer

    topo = deep()  # every link 100 Gb/s; GPUs 0 and 4 meet at the core (4:1, one port per spine block)
    nbytes = 16_000_000
    no_startup = StartupLatency(base_s=0.0, nvlink_step_s=0.0, net_step_s=0.0)
    schedule = Schedule("p2p", (0, 4), nbytes, 1, (Transfer(0, 1, nbytes, 0, 0, ()),))
    worker = ns3.Ns3Worker()
    try:
        worker.ensure_started()
        seconds = ns3.Ns3Model(topo, latency=no_startup, worker=worker).run_schedules(
            [schedule], [0.0], "core")["collective_seconds"][0]
    finally:
        worker.close()
    # the wire: 16 MB at 100 Gb/s plus the path's links and switches (conftest figures, the core's 1 / 2 µs)
    path_s = (2 * 0.01 + 2 * 0.15 + 2 * 1.0 + 2 * 0.13 + 2 * 0.5 + 2.0) * US
    assert seconds == pytest.approx(nbytes * 8 / BPS + path_s, rel=0.03)
    flow = FlowModel(topo, latency=no_startup).time({"j": allreduce_graph((0, 4), 2 * nbytes)})["j"].step_seconds
    # the flow backend's 2-rank all-reduce of 2S: two dependent steps of S each way, so twice the transfer
    assert seconds == pytest.approx(flow / 2, rel=0.03)
