"""NCCL's names in its own index order and the tuner's constant tables per release (NVIDIA/nccl
v2.30.7-1, commit 73cf112295c33aee2b895f329f592f2a9b4b0f97; each number with the file and table it comes
from). No NCCL code text is copied, only its numbers."""

from __future__ import annotations

from dataclasses import dataclass


# ----------------------------------------------------------------------------------------------
# Names, in NCCL's index order (the order decides ties in the pick, as in topoGetAlgoInfo's loops).

# src/include/plugin/nccl_tuner.h: NCCL_ALGO_TREE 0 .. NCCL_ALGO_PAT 6 (names as NCCL_ALGO spells them).
ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
# nccl_tuner.h: NCCL_PROTO_LL 0, NCCL_PROTO_LL128 1, NCCL_PROTO_SIMPLE 2.
PROTOCOLS = ("LL", "LL128", "Simple")
# src/include/nccl_common.h, ncclFunc_t: Broadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4.
COLLECTIVES = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")
# nccl_tuner.h: NCCL_VOLTA_COMPCAP_IDX 0 .. NCCL_BLACKWELL_COMPCAP_IDX 3.
ARCHS = ("volta", "ampere", "hopper", "blackwell")
# Compute capability standing for each architecture where NCCL compares minCompCap with a number
# (tuning.cc picks the table row with minCompCap >= 100 / 90 / 80, else Volta).
ARCH_COMPCAP = {"volta": 70, "ampere": 80, "hopper": 90, "blackwell": 100}
# src/include/graph.h, PATH_LOC 0 .. PATH_DIS 11: how two devices are connected, best first.
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")
CPUS = ("intel", "amd", "arm", "power")

TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT = range(len(ALGORITHMS))
LL, LL128, SIMPLE = range(len(PROTOCOLS))
BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE = range(len(COLLECTIVES))
HW_NVLINK, HW_PCI, HW_NET = 0, 1, 2  # nccl_tuner.h, NCCL_HW_*: rows of the hardware latency table

# ----------------------------------------------------------------------------------------------
# Release constants. One NcclRelease per NCCL release; add another release by writing its tables
# (the formulas below follow v2.30.7; a release whose formulas differ needs code, not only numbers).

Row3 = tuple[float, float, float]  # one entry per protocol (LL, LL128, Simple) or per node count (1, 2, >2)


@dataclass(frozen=True)
class NcclRelease:
    tag: str
    commit: str
    base_latency_us: tuple[Row3, ...]  # [algorithm][protocol]
    hw_latency_us: tuple[tuple[Row3, ...], ...]  # [NVLink / PCI / NET][algorithm][protocol]
    ll_max_bw: tuple[Row3, ...]  # [row][1 node, 2 nodes, more], row chosen as tuning.cc does (see _tune)
    per_channel_max_ring_ll128_bw: tuple[Row3, ...]  # [arch][1 node, 2 nodes, more]
    per_channel_max_tree_ll128_bw: tuple[Row3, ...]
    per_channel_max_tree_bw: tuple[Row3, ...]
    per_channel_max_nvls_tree_bw: tuple[Row3, ...]
    nvls_efficiency: tuple[float, ...]  # [arch]
    tree_correction: tuple[tuple[float, ...], ...]  # [protocol][log2(nBytes / 64)], 64 B .. 512 MiB
    net_overhead_us: tuple[float, ...]  # [cpu in CPUS order]: network post overhead per ring step
    # Topology search inputs (used by tuner_inputs only).
    speeds_intra: tuple[tuple[float, ...], ...]  # [volta+ampere, hopper, blackwell], GB/s per channel
    speeds_inter: tuple[tuple[float, ...], ...]
    nvlink_link_gbs: tuple[float, ...]  # [arch]: one NVLink as NCCL counts it
    nvls_channels: tuple[int, int, int]  # Hopper; Blackwell 1 node; Blackwell several nodes


V2_30_7 = NcclRelease(
    tag="v2.30.7-1",
    commit="73cf112295c33aee2b895f329f592f2a9b4b0f97",
    # src/graph/tuning.cc, ncclTunerConstantsDefaults.baseLatencies, in ALGORITHMS order.
    base_latency_us=((6.8, 14.0, 8.4), (6.6, 14.0, 8.4), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0),
                     (8.0, 8.0, 8.0)),
    # tuning.cc, ncclTunerConstantsDefaults.hwLatencies: NVLink, PCI, NET rows, ALGORITHMS order.
    hw_latency_us=(
        ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25), (0, 0, 4.0)),
        ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 0), (0, 0, 0), (0, 0, 4.0)),
        ((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 20.9), (0, 0, 14)),
    ),
    # tuning.cc, llMaxBws (GB/s); the Blackwell row is written 2 x the Hopper one there.
    ll_max_bw=((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0)),
    # tuning.cc, perChMaxRingLL128Bws / perChMaxTreeLL128Bws / perChMaxTreeBws / perChMaxNVLSTreeBws.
    per_channel_max_ring_ll128_bw=((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7),
                                   (40.0, 40.0, 40.0)),
    per_channel_max_tree_ll128_bw=((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0),
                                   (55.6, 31.67, 20.0)),
    per_channel_max_tree_bw=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0)),
    per_channel_max_nvls_tree_bw=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0)),
    # tuning.cc, nvlsEfficiency.
    nvls_efficiency=(0.0, 0.0, 0.85, 0.74),
    # tuning.cc, treeCorrectionFactor (rows LL, LL128, Simple).
    tree_correction=(
        (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
        (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
        (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
    ),
    # tuning.cc, getNetOverhead: 1 us on Intel x86, 2 us on AMD x86, 1 us otherwise.
    net_overhead_us=(1.0, 2.0, 1.0, 1.0),
    # src/graph/search.cc, speedArrayIntra / sm90SpeedArrayIntra / sm100SpeedArrayIntra and the Inter ones.
    speeds_intra=(
        (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
        (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
        (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
    ),
    speeds_inter=(
        (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
        (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
        (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4,
         1.2, 0.24, 0.12),
    ),
    # src/graph/topo.h, SM70_NVLINK_BW, SM80_NVLINK_BW, SM90_NVLINK_BW, SM100_NVLINK_BW.
    nvlink_link_gbs=(20.0, 20.0, 20.6, 40.1),
    # src/transport/nvls.cc, NVLS_NCHANNELS_SM90, NVLS_NCHANNELS_SM100_NVL, NVLS_NCHANNELS_SM100.
    nvls_channels=(16, 24, 32),
)

RELEASES = {"2.30.7": V2_30_7}

# Factors written inline in v2.30.7's formulas (tuning.cc ncclTopoTuneModel / ncclTopoGetAlgoTime).
RING_LL_BW_FACTOR = 0.5
RING_LL128_BW_FACTOR = 0.92  # "120.0/128.0" in NCCL's comment, 0.92 in its code
TREE_ALL_REDUCE_BW_FACTOR = 0.92
TREE_LL_BW_FACTOR = 1.0 / 3.8
TREE_LL128_BW_FACTOR_ONE_NODE = 7.0 / 9.0
TREE_LL128_BW_FACTOR_NODES = 120.0 / 128.0
PLAIN_TREE_PATTERN_FACTOR = 0.85  # maxTreePattern == NCCL_TOPO_PATTERN_TREE
PAT_BW_FACTOR = 0.75
COLLNET_DIRECT_SM90_FACTOR = 0.85
COLLNET_DIRECT_NET_FACTOR = 0.9  # all_gather / reduce_scatter: bwInter x 0.9
COLLNET_DIRECT_ARITY_LATENCY_US = 0.4
PAT_LOG_LATENCY_DIVISOR = 3.5
PAT_LINEAR_LATENCY_US = 2.8
RING_PLATEAU_FACTOR = 1.4  # minCompCap >= 80
RING_PLATEAU_FACTOR_VOLTA = 1.9
RING_PLATEAU_MIN_BYTES_PER_CHANNEL_RANK = 64
SIMPLE_NET_OVERHEAD_MULTIPLIER = 3

# src/include/device.h and comm.h (thread counts and per-thread work thresholds).
WARP_SIZE = 32
NCCL_MAX_NTHREADS = 640
NCCL_SIMPLE_MAX_NTHREADS = 512
NCCL_LL_MAX_NTHREADS = 512
NCCL_LL128_MAX_NTHREADS = 640
LL_THREAD_THRESHOLD, LL128_THREAD_THRESHOLD, SIMPLE_THREAD_THRESHOLD = 8, 8, 64
COLLNET_THREAD_THRESHOLD = 512  # tuning.cc: CollNet Direct / Chain Simple thresholds
NCCL_MAX_DIRECT_ARITY = 7  # device.h: CollNet needs at most 8 local GPUs
NCCL_MAX_NVLS_ARITY = 32
PCI_BW = 12.0  # src/graph/topo.h (PCIe Gen3 x16, GB/s): below it Ring/Simple gets 256 threads
MAXCHANNELS = 64  # device.h
RING_MAX_CHANNELS = MAXCHANNELS // 2  # init.cc: ringGraph->maxChannels



def _index(names: tuple[str, ...], name: str, what: str) -> int:
    if name not in names:
        raise ValueError(f"{what} {name!r}: expected one of {names}")
    return names.index(name)
