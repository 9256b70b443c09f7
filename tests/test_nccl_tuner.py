"""NCCL's own algorithm/protocol model (artist/network/nccl/) against independent expectations.

Hand-computed times are written out below from the constants of NVIDIA/nccl v2.30.7-1
src/graph/tuning.cc (as listed in ../shared/nccl-logs/nccl_tuning_tables.md): base latencies,
hardware latencies per hop kind, the LL / tree caps, the formulas of ncclTopoTuneModel and
ncclTopoGetAlgoTime. The log tests use the real nccl-tests logs shipped in calibration/data.
"""

from __future__ import annotations

import math

import pytest

from artist.calibration.nccl_tests import parse_nccl_tests
from artist.network.nccl import (GraphInfo, Machine, TunerInputs, choose, nvlink_gbs_of, predicted_time,
                                 tuner_inputs, tuning_table)
from conftest import REPO

DATA = REPO / "calibration" / "data"
US = 1e-6
GIB, MIB = 1 << 30, 1 << 20


def two_by_eight_h100(**overrides) -> TunerInputs:
    """2 nodes x 8 Hopper GPUs as a DGX H100 pair's search results: 8 ring channels of 48 GB/s (one
    per 400 Gb/s NIC), trees with the same channels at 48 GB/s intra / 24 GB/s inter, 16 channels."""
    kw = dict(arch="hopper", n_ranks=16, n_nodes=2, ring=GraphInfo(8, 48.0, 48.0), tree=GraphInfo(8, 48.0, 24.0),
              coll_channels=16)
    kw.update(overrides)
    return TunerInputs(**kw)


# --- hand-computed times ------------------------------------------------------------------------

def test_ring_all_reduce_simple_two_nodes_by_hand():
    inp = two_by_eight_h100()
    # Bandwidth: nNodes <= 2 -> bwIntra; 8 channels x 48 GB/s; Ring/Simple has no refinement;
    # bus -> algorithm bandwidth: x nRanks / nsteps = 16 / (2 x 15).
    bw = 8 * 48.0 * 16 / 30
    # Latency: base Ring/Simple 8.4; 2 x 15 = 30 steps of which 2 x (2 - 1) = 2 cross the network
    # (NET Ring/Simple 14.0) and 28 stay on NVLink (Ring/Simple 3.4, above the Intel net overhead
    # 1.0 x 3 = 3.0 Simple pays per step).
    latency = 8.4 + 28 * 3.4 + 2 * 14.0
    # 8 KiB: 8192 / (16 channels x 16 ranks) = 32 B < 64 B, no ring plateau.
    assert predicted_time(inp, "all_reduce", 8192, "Ring", "Simple") == pytest.approx(
        (latency + 8192 / (1000 * bw)) * US, rel=1e-6)
    # 1 GiB: past the plateau threshold, the latency counts 1.4 times (minCompCap >= 80).
    assert predicted_time(inp, "all_reduce", GIB, "Ring", "Simple") == pytest.approx(
        (1.4 * latency + GIB / (1000 * bw)) * US, rel=1e-6)


def test_ring_all_reduce_ll_and_the_cpu_vendor_by_hand():
    # LL: bandwidth min(llMaxBw, 0.5 x bus); llMaxBw row 0 (Intel) / row 1 (AMD), column "2 nodes".
    intel, amd = two_by_eight_h100(), two_by_eight_h100(cpu="amd")
    bw_intel = min(39.0, 0.5 * 8 * 48.0) * 16 / 30
    bw_amd = min(22.5, 0.5 * 8 * 48.0) * 16 / 30
    # Intra steps pay max(NVLink Ring/LL 0.6, net overhead): Intel 1.0, AMD 2.0 (not x3: not Simple).
    lat_intel = 6.6 + 28 * 1.0 + 2 * 2.7
    lat_amd = 6.6 + 28 * 2.0 + 2 * 2.7
    assert predicted_time(intel, "all_reduce", 4096, "Ring", "LL") == pytest.approx(
        (lat_intel + 4096 / (1000 * bw_intel)) * US, rel=1e-6)
    assert predicted_time(amd, "all_reduce", 4096, "Ring", "LL") == pytest.approx(
        (lat_amd + 4096 / (1000 * bw_amd)) * US, rel=1e-6)
    # AMD Simple: the overhead 2.0 x 3 = 6.0 now beats NVLink's 3.4 on the 28 intra steps.
    assert predicted_time(amd, "all_reduce", 8192, "Ring", "Simple") == pytest.approx(
        (8.4 + 28 * 6.0 + 2 * 14.0 + 8192 / (1000 * 8 * 48.0 * 16 / 30)) * US, rel=1e-6)


def test_ring_all_gather_counts_half_the_steps_by_hand():
    inp = two_by_eight_h100()
    # all_gather: nsteps = 15 of which nNodes - 1 = 1 crosses the network; no plateau factor (all_reduce only).
    bw = 8 * 48.0 * 16 / 15
    latency = 8.4 + 14 * 3.4 + 1 * 14.0
    assert predicted_time(inp, "all_gather", GIB, "Ring", "Simple") == pytest.approx(
        (latency + GIB / (1000 * bw)) * US, rel=1e-6)


def test_tree_all_reduce_by_hand():
    inp = two_by_eight_h100()
    # Simple: bus = 8 x 48 (bwIntra, 2 nodes); all-reduce trees: min(x 0.92, 8 x Hopper 2-node cap 41.4);
    # bus -> algorithm bandwidth x 0.5.
    bw = min(8 * 48.0 * 0.92, 8 * 41.4) * 0.5
    # Latency: base Tree/Simple 8.4 + 2 x ((16 / 2 - 1) x NVLink Tree/Simple 4.0 + log2(2) x NET Tree/Simple 14).
    latency = 8.4 + 2 * (7 * 4.0 + 1 * 14.0)
    # 1 MiB: log2(2^20 / 64) = 14, treeCorrectionFactor[Simple][14] = 0.5.
    assert predicted_time(inp, "all_reduce", MIB, "Tree", "Simple") == pytest.approx(
        (latency + MIB / (1000 * bw * 0.5)) * US, rel=1e-6)
    # 1 GiB: log2(2^30 / 64) = 24 is past the table (< 23 only): no correction.
    assert predicted_time(inp, "all_reduce", GIB, "Tree", "Simple") == pytest.approx(
        (latency + GIB / (1000 * bw)) * US, rel=1e-6)
    # LL128: then min(x 120/128, 8 x Hopper tree LL128 cap 36.7); latency 14.0 + 2 x (7 x 1.25 + 8.5);
    # 1 MiB correction LL128[14] = 0.6.
    bw128 = min(min(8 * 48.0 * 0.92, 8 * 41.4) * 120 / 128, 8 * 36.7) * 0.5
    assert predicted_time(inp, "all_reduce", MIB, "Tree", "LL128") == pytest.approx(
        (14.0 + 2 * (7 * 1.25 + 8.5) + MIB / (1000 * bw128 * 0.6)) * US, rel=1e-6)
    # The simpler tree pattern costs 15 % of the bandwidth.
    plain = two_by_eight_h100(tree_pattern="tree")
    assert predicted_time(plain, "all_reduce", GIB, "Tree", "Simple") == pytest.approx(
        (latency + GIB / (1000 * bw * 0.85)) * US, rel=1e-6)


def test_tree_on_many_nodes_uses_log_depth_and_inter_bandwidth_by_hand():
    inp = two_by_eight_h100(n_ranks=128, n_nodes=16)
    # > 2 nodes: bwInter 24 and the "4+ nodes" Hopper cap 36.0; depth log2(16) = 4 network hops.
    bw = min(8 * 24.0 * 0.92, 8 * 36.0) * 0.5
    latency = 8.4 + 2 * (7 * 4.0 + 4 * 14.0)
    assert predicted_time(inp, "all_reduce", 4 * GIB, "Tree", "Simple") == pytest.approx(
        (latency + 4 * GIB / (1000 * bw)) * US, rel=1e-6)


def test_nvls_one_node_by_hand():
    inp = TunerInputs(arch="hopper", n_ranks=8, n_nodes=1, ring=GraphInfo(12, 30.0, 30.0),
                      tree=GraphInfo(12, 30.0, 30.0), nvls=GraphInfo(8, 40.0, 60.0), nvls_support=True,
                      nvswitch=True, nvls_channels=16)
    # Per channel: min(bwIntra x Hopper efficiency 0.85 x 7/8 channels x 2 (all-reduce), bwInter 60);
    # 8 channels; x nRanks / nsteps = 8 / 14. Latency: NVLink NVLS/Simple 25, no base.
    bw = min(40.0 * 0.85 * 7 / 8 * 2, 60.0) * 8 * 8 / 14
    assert predicted_time(inp, "all_reduce", GIB, "NVLS", "Simple") == pytest.approx(
        (25.0 + GIB / (1000 * bw)) * US, rel=1e-6)
    big = choose(inp, "all_reduce", GIB)
    assert (big.algorithm, big.protocol, big.channels) == ("NVLS", "Simple", 16)
    # NVLS runs Simple only, and all_gather on one node gets (ppn - 1) / ppn instead of x 2.
    assert predicted_time(inp, "all_reduce", GIB, "NVLS", "LL") is None
    ag_bw = min(40.0 * 0.85 * 7 / 8 * 7 / 8, 60.0) * 8
    assert predicted_time(inp, "all_gather", GIB, "NVLS", "Simple") == pytest.approx(
        (25.0 + GIB / (1000 * ag_bw)) * US, rel=1e-6)


def test_nvls_tree_two_nodes_by_hand():
    nvls = GraphInfo(8, 40.0, 48.0)
    inp = two_by_eight_h100(nvls=nvls, nvls_support=True, nvswitch=True, nvls_channels=16)
    # Intra 40 x 0.85 x 7/8 x 2 = 59.5; inter 48 x 2 (two nodes); Hopper 2-node NVLSTree cap 57.7.
    bw = min(40.0 * 0.85 * 7 / 8 * 2, 48.0 * 2, 57.7) * 8 * 16 / 30
    # Latency: intra NVLink NVLSTree 25 + 2 x log2(2) x NET NVLSTree 20.9.
    assert predicted_time(inp, "all_reduce", GIB, "NVLSTree", "Simple") == pytest.approx(
        (25.0 + 2 * 20.9 + GIB / (1000 * bw)) * US, rel=1e-6)
    # NVLS itself needs CollNet (SHARP) across nodes.
    assert predicted_time(inp, "all_reduce", GIB, "NVLS", "Simple") is None


# --- the search stand-in -------------------------------------------------------------------------

H100_NVLINK = 18 * 20.6  # topo.h SM90_NVLINK_BW per link; 18 links to the NVSwitches
A100_NVLINK = 12 * 20.0


def test_nvlink_figure_is_links_times_nccls_per_link_bandwidth():
    assert nvlink_gbs_of("hopper", 18) == pytest.approx(H100_NVLINK)
    assert nvlink_gbs_of("ampere", 12) == pytest.approx(A100_NVLINK)


def test_one_h100_node_gets_ncclss_graphs():
    inp = tuner_inputs(Machine("hopper", 8, nvlink_gbs=H100_NVLINK, nvswitch=True))
    # Ring: 60 GB/s (top of the Hopper intra table) fits floor(370.8 / 60) = 6 channels = 360 GB/s, no
    # slower speed gives more; >= 50 GB/s channels are doubled at half the speed: 12 x 30.
    assert (inp.ring.n_channels, inp.ring.bw_intra) == (12, 30.0)
    # NVLS: 8 heads; each GPU moves 7 shares + 2 as head: 9 x 40 = 360 <= 370.8 < 9 x 50; bwInter is
    # raised to the top of the table (60 < 2 x 40).
    assert (inp.nvls.n_channels, inp.nvls.bw_intra, inp.nvls.bw_inter) == (8, 40.0, 60.0)
    assert inp.coll_channels == 24 and inp.nvls_channels == 16


def test_two_h100_nodes_with_a_400g_nic_per_gpu():
    inp = tuner_inputs(Machine("hopper", 8, 2, nics_per_node=8, nic_gbs=50.0, nvlink_gbs=H100_NVLINK,
                               nvswitch=True))
    # One channel per NIC at 48 GB/s (min(NIC 50, PCIe Gen5 x16 48) rounded to the inter table); each GPU
    # sends on NVLink in 7 of 8 channels: 7 x 48 = 336 <= 370.8. Hopper keeps < 50 GB/s channels undoubled.
    assert (inp.ring.n_channels, inp.ring.bw_intra, inp.ring.bw_inter) == (8, 48.0, 48.0)
    # NVLS: 8 heads need 9 x s <= 370.8 -> 40; bwInter raised to what the NIC path allows, 48.
    assert (inp.nvls.n_channels, inp.nvls.bw_intra, inp.nvls.bw_inter) == (8, 40.0, 48.0)
    assert inp.coll_channels == 16  # 2 x 8; not below 16, so no Hopper doubling


def test_two_a100_nodes_with_four_100g_nics():
    inp = tuner_inputs(Machine("ampere", 8, 2, nics_per_node=4, nic_gbs=12.5, nvlink_gbs=A100_NVLINK,
                               nvswitch=True))
    # 4 NICs x one 12 GB/s channel; the tree's intra speed rises to twice its inter speed (24).
    assert (inp.ring.n_channels, inp.ring.bw_intra) == (4, 12.0)
    assert (inp.tree.n_channels, inp.tree.bw_intra, inp.tree.bw_inter) == (4, 24.0, 12.0)
    assert inp.nvls.n_channels == 0 and not inp.nvls_support  # no NVLink SHARP before Hopper


# --- sanity of the choice -----------------------------------------------------------------------

MACHINES = {
    "1x8 H100": Machine("hopper", 8, nvlink_gbs=H100_NVLINK, nvswitch=True),
    "2x8 H100": Machine("hopper", 8, 2, 8, 50.0, H100_NVLINK, True),
    "16x8 H100": Machine("hopper", 8, 16, 8, 50.0, H100_NVLINK, True),
    "2x8 A100": Machine("ampere", 8, 2, 4, 12.5, A100_NVLINK, True),
    "1x8 A100": Machine("ampere", 8, nvlink_gbs=A100_NVLINK, nvswitch=True),
    "16x1 H100": Machine("hopper", 1, 16, 1, 50.0),
    "4x8 V100 PCIe": Machine("volta", 8, 4, 1, 12.5),
}


@pytest.mark.parametrize("name", MACHINES)
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"])
def test_latency_bound_sizes_pick_ll_and_large_sizes_simple(name, collective):
    inp = tuner_inputs(MACHINES[name])
    tiny = choose(inp, collective, 64)
    # With one GPU per node, all_gather / reduce_scatter have PAT, NCCL's logarithmic-latency
    # algorithm, which runs Simple only: on 16 nodes its 8.0 + log2(16) x 14 / 3.5 + 16 x 2.8 = 68.8 us
    # beats Ring/LL's 6.6 + 15 x 5.0 = 81.6 us (NET Tree/LL latency with one GPU per node).
    assert tiny.protocol == "LL" or (tiny.algorithm, tiny.protocol) == ("PAT", "Simple")
    if MACHINES[name].gpus_per_node == 1 and collective in ("all_gather", "reduce_scatter"):
        assert tiny.algorithm == "PAT"
        # PAT's bandwidth: the tree graph's 2 channels x bwInter 24 (> 2 nodes) x 0.75.
        assert tiny.seconds == pytest.approx((8.0 + 4 * 14 / 3.5 + 16 * 2.8 + 64 / (1000 * 2 * 24.0 * 0.75)) * US)
    assert choose(inp, collective, 16 * GIB).protocol == "Simple"


@pytest.mark.parametrize("name", MACHINES)
def test_predicted_time_never_decreases_with_size(name):
    inp = tuner_inputs(MACHINES[name])
    for collective in ("all_reduce", "all_gather"):
        times = [choose(inp, collective, 1 << k).seconds for k in range(3, 35)]
        assert all(b >= a for a, b in zip(times, times[1:]))


def test_ring_beats_tree_at_large_sizes_with_one_gpu_per_node():
    # One GPU per node: the tree pattern is the plain one (x 0.85), all-reduce trees x 0.92 and the
    # tree moves half the algorithm bandwidth per bus byte; the ring moves n / (2 (n - 1)).
    inp = tuner_inputs(MACHINES["16x1 H100"])
    ring = predicted_time(inp, "all_reduce", 4 * GIB, "Ring", "Simple")
    tree = predicted_time(inp, "all_reduce", 4 * GIB, "Tree", "Simple")
    assert ring < tree
    assert choose(inp, "all_reduce", 4 * GIB).algorithm == "Ring"


def test_pat_only_with_one_gpu_per_node():
    one_gpu = tuner_inputs(Machine("hopper", 1, 64, 1, 50.0))
    picks = {choose(one_gpu, "all_gather", 1 << k).algorithm for k in range(10, 34)}
    assert "PAT" in picks and "Ring" in picks
    assert predicted_time(one_gpu, "all_reduce", MIB, "PAT", "Simple") is None  # PAT is AG / RS only
    eight_gpus = tuner_inputs(MACHINES["16x8 H100"])
    assert predicted_time(eight_gpus, "all_gather", MIB, "PAT", "Simple") is None


def test_nvls_and_collnet_only_where_enabled():
    for name in ("2x8 A100", "1x8 A100", "16x1 H100", "4x8 V100 PCIe"):
        inp = tuner_inputs(MACHINES[name])
        for k in range(3, 35):
            assert choose(inp, "all_reduce", 1 << k).algorithm in ("Ring", "Tree")
    without_sharp = tuner_inputs(Machine("hopper", 8, 2, 8, 50.0, H100_NVLINK, True, nvls=False))
    assert without_sharp.nvls.n_channels == 0
    assert predicted_time(without_sharp, "all_reduce", GIB, "NVLSTree", "Simple") is None
    with_sharp = tuner_inputs(MACHINES["2x8 H100"])
    assert predicted_time(with_sharp, "all_reduce", GIB, "NVLSTree", "Simple") is not None
    assert predicted_time(with_sharp, "all_reduce", GIB, "CollNetDirect", "Simple") is None
    collnet = tuner_inputs(Machine("hopper", 8, 2, 8, 50.0, H100_NVLINK, True, collnet=True))
    assert predicted_time(collnet, "all_reduce", GIB, "CollNetDirect", "Simple") is not None
    assert predicted_time(collnet, "all_reduce", GIB, "NVLS", "Simple") is not None
    assert predicted_time(collnet, "all_reduce", GIB, "CollNetDirect", "LL") is None


def test_ll128_default_rules():
    # Before Hopper LL128 stops at PXB paths to the NIC; Hopper allows up to PXN; never over PCIe GPU-GPU.
    ampere_pxn = tuner_inputs(Machine("ampere", 8, 2, 4, 12.5, A100_NVLINK, True, nic_path="PXN"))
    hopper_pxn = tuner_inputs(Machine("hopper", 8, 2, 8, 50.0, H100_NVLINK, True, nic_path="PXN"))
    pcie_only = tuner_inputs(MACHINES["4x8 V100 PCIe"])
    assert predicted_time(ampere_pxn, "all_reduce", MIB, "Ring", "LL128") is None
    assert predicted_time(hopper_pxn, "all_reduce", MIB, "Ring", "LL128") is not None
    assert predicted_time(pcie_only, "all_reduce", MIB, "Ring", "LL128") is None
    assert predicted_time(pcie_only, "all_reduce", MIB, "Ring", "LL") is not None


def test_broadcast_and_reduce_are_rings_only():
    inp = tuner_inputs(MACHINES["2x8 H100"])
    table = tuning_table(inp, "broadcast")
    assert {a for (a, _), (_, bw) in table.items() if bw > 0} == {"Ring"}


def test_small_sizes_run_on_fewer_channels_and_threads():
    inp = tuner_inputs(MACHINES["2x8 H100"])
    small, large = choose(inp, "all_reduce", 8 * 1024), choose(inp, "all_gather", 4 * GIB)
    assert small.channels < inp.coll_channels
    assert (large.algorithm, large.channels, large.threads) == ("Ring", inp.coll_channels, 512 + 32)


def test_bad_names_are_refused():
    inp = tuner_inputs(MACHINES["1x8 H100"])
    with pytest.raises(ValueError, match="collective"):
        choose(inp, "alltoall", 1024)
    with pytest.raises(ValueError, match="algorithm"):
        predicted_time(inp, "all_reduce", 1024, "ring", "Simple")
    with pytest.raises(ValueError, match="arch"):
        Machine("pascal", 8)


# --- the shipped nccl-tests logs ----------------------------------------------------------------

def measured_rows(filename: str, collective: str):
    (test,) = parse_nccl_tests(DATA / filename).tests_of(collective)
    return [(row.size_bytes, row.out_of_place.busbw_gbs) for row in test.rows]


# Each log's machine and the bus bandwidth a ring cannot exceed there, from hardware figures alone:
# a ring all-reduce moves its bus bandwidth over every GPU's link and, across nodes, over each node's
# NICs in total. The logs' NIC fits: a3-megagpu-8g has 8 x 200 Gb/s GPUDirect-TCPXO NICs, a p4de 4 x
# 100 Gb/s EFA (calibration/data/SOURCES.md); H100 SXM NVLink is 18 links x 25 GB/s per direction.
# (No AWS p5 log is shipped; the highest bus bandwidth shipped, 482 GB/s, is the one-node 8 x H100 log,
# where no NIC is used and the bound it breaks is NVLink's 450 GB/s.)
LOGS = {
    "xxrjun_1node_8xH100_allcoll.txt": (MACHINES["1x8 H100"], 18 * 25.0),
    "gcp_a3mega_2node_16xH100_tcpxo.txt": (Machine("hopper", 8, 2, 8, 200 / 8, H100_NVLINK, True), 8 * 200 / 8),
    "aws_p4de_2node_16xA100_efa.txt": (MACHINES["2x8 A100"], 4 * 100 / 8),
}


@pytest.mark.parametrize("filename", LOGS)
def test_model_picks_another_algorithm_where_measurements_beat_any_ring(filename):
    machine, ring_bound = LOGS[filename]
    inp = tuner_inputs(machine)
    above = [(size, busbw) for size, busbw in measured_rows(filename, "all_reduce") if busbw > ring_bound]
    assert len(above) >= 3  # the region exists in every one of these logs
    for size, busbw in above:
        pick = choose(inp, "all_reduce", size)
        assert pick.algorithm != "Ring", (filename, size, busbw, pick)
        # ... and NCCL's own model of that algorithm also reaches past the ring bound there.
        n = inp.n_ranks
        assert size / pick.seconds / 1e9 * 2 * (n - 1) / n > ring_bound


@pytest.mark.parametrize("filename, collectives, from_size", [
    # Ten nodes, one GPU each: rings at the NIC's rate (NCCL's tree model gives far less there).
    ("xxrjun_10node_10xH100_1gpn_allcoll.txt", ("all_reduce", "all_gather", "reduce_scatter"), 128 * MIB),
    # One H100 node: all_gather / reduce_scatter run as rings (NVLS gets (ppn - 1) / ppn, not 2x).
    ("xxrjun_1node_8xH100_allcoll.txt", ("all_gather", "reduce_scatter"), 256 * MIB),
])
def test_model_picks_ring_where_the_logs_run_at_ring_speed(filename, collectives, from_size):
    machine = MACHINES["1x8 H100"] if "1node" in filename else Machine("hopper", 1, 10, 1, 50.0)
    inp = tuner_inputs(machine)
    n = inp.n_ranks
    for collective in collectives:
        factor = 2 * (n - 1) / n if collective == "all_reduce" else (n - 1) / n
        for size, busbw in measured_rows(filename, collective):
            if size < from_size:
                continue
            pick = choose(inp, collective, size)
            assert pick.algorithm == "Ring", (collective, size, pick)
            predicted = size / pick.seconds / 1e9 * factor
            assert math.isclose(predicted, busbw, rel_tol=0.10), (collective, size, predicted, busbw)
