"""NCCL's own choice of algorithm and protocol, re-implemented from its source.

NCCL times every (algorithm, protocol) pair for a collective with a latency + size / bandwidth model
and runs the fastest. This module re-implements that model in Python from NVIDIA/nccl release
v2.30.7-1 (commit 73cf112295c33aee2b895f329f592f2a9b4b0f97); no NCCL code text is copied, only its
numbers, each with the file and table it comes from:

- src/graph/tuning.cc, ncclTopoTuneModel: per (collective, algorithm, protocol) a latency (us) and
  a bandwidth (GB/s) from the topology search's per-channel bandwidths, its channel counts and the
  release's constant tables; then the default enable rules (LL128, NVLS, CollNet, PAT).
- src/graph/tuning.cc, ncclTopoGetAlgoTime: time = latency + nBytes / bandwidth, with the tree
  correction factors and the ring "plateau" latency factor.
- src/enqueue.cc, updateCollCostTable / topoGetAlgoInfo: which algorithms are tried for one call,
  the pick (smallest time; ties go to the lower algorithm then protocol index) and the channel and
  thread counts set afterwards.
- src/graph/search.cc, src/graph/topo.h, src/graph/connect.cc, src/transport/nvls.cc: what the
  topology search hands the tuner; ``tuner_inputs`` derives that from a machine description with
  the simplifications listed in its docstring.

Sizes are NCCL's nBytes: count x element size for all_reduce, broadcast and reduce, and the whole
nRanks x count buffer for all_gather and reduce_scatter (enqueue.h, ncclFuncMaxSendRecvCount). That
is the "size" column nccl-tests prints, so a log's rows can be fed in as they are.

Assumptions that hold throughout (NCCL defaults; the environment overrides are not modelled):
no NCCL_ALGO / NCCL_PROTO / NCCL_NTHREADS / NCCL_NET_OVERHEAD settings, one collective per launch
(numPipeOps = 1), all GPUs of one architecture, a sum on a non-fp8 type, no tuner plugin, no user
buffer registration (so the NVLS-by-registration override of ncclGetAlgoInfo does not apply).
"""

from __future__ import annotations

import math
from functools import lru_cache

from artist.network.nccl.releases import (ALGORITHMS, ALL_GATHER, ALL_REDUCE, ARCHS, ARCH_COMPCAP, BROADCAST,
                                          COLLECTIVES, COLLNET_CHAIN, COLLNET_DIRECT,
                                          COLLNET_DIRECT_ARITY_LATENCY_US, COLLNET_DIRECT_NET_FACTOR,
                                          COLLNET_DIRECT_SM90_FACTOR, COLLNET_THREAD_THRESHOLD, CPUS, HW_NET,
                                          HW_NVLINK, HW_PCI, LL, LL128, LL128_THREAD_THRESHOLD,
                                          LL_THREAD_THRESHOLD, NCCL_LL128_MAX_NTHREADS, NCCL_LL_MAX_NTHREADS,
                                          NCCL_MAX_DIRECT_ARITY, NCCL_MAX_NTHREADS, NCCL_MAX_NVLS_ARITY,
                                          NCCL_SIMPLE_MAX_NTHREADS, NVLS, NVLS_TREE, PAT, PATH_TYPES,
                                          PAT_BW_FACTOR, PAT_LINEAR_LATENCY_US, PAT_LOG_LATENCY_DIVISOR, PCI_BW,
                                          PLAIN_TREE_PATTERN_FACTOR, PROTOCOLS, REDUCE, REDUCE_SCATTER, RING,
                                          RING_LL128_BW_FACTOR, RING_LL_BW_FACTOR, RING_PLATEAU_FACTOR,
                                          RING_PLATEAU_FACTOR_VOLTA, RING_PLATEAU_MIN_BYTES_PER_CHANNEL_RANK,
                                          SIMPLE, SIMPLE_NET_OVERHEAD_MULTIPLIER, SIMPLE_THREAD_THRESHOLD, TREE,
                                          TREE_ALL_REDUCE_BW_FACTOR, TREE_LL128_BW_FACTOR_NODES,
                                          TREE_LL128_BW_FACTOR_ONE_NODE, TREE_LL_BW_FACTOR, WARP_SIZE, _index)
from artist.network.nccl.inputs import (Choice, TunerInputs)


# ----------------------------------------------------------------------------------------------
# The model: ncclTopoTuneModel.

def _log2i(n: int) -> int:
    """NCCL's log2i on the host: floor(log2(n)), -1 for 0 (src/include/bitops.h, log2Down)."""
    return n.bit_length() - 1


def _pat_enabled(inp: TunerInputs) -> bool:
    # tuning.cc, ncclPatEnable: SM60+, one GPU per node, host (not offloaded) networking.
    return inp.n_nodes == inp.n_ranks and inp.net_device_host


def _skipped(coll: int, a: int, p: int, inp: TunerInputs) -> bool:
    """Combinations ncclTopoTuneModel never fills in (their bandwidth stays 0)."""
    if coll in (BROADCAST, REDUCE) and a != RING:
        return True
    if coll in (ALL_GATHER, REDUCE_SCATTER) and a not in (PAT, RING, NVLS, COLLNET_DIRECT):
        return True
    if coll == ALL_REDUCE and a == PAT:
        return True
    if a in (NVLS, NVLS_TREE) and p != SIMPLE:
        return True
    return a == PAT and (p != SIMPLE or not _pat_enabled(inp))


def _bus_bandwidth(coll: int, a: int, p: int, inp: TunerInputs, caps: dict) -> float:
    """The per-algorithm bandwidth (GB/s) ncclTopoTuneModel stores in comm->bandwidths."""
    rel, g = inp.release, inp.graph(a)
    n_ranks, n_nodes, ppn = inp.n_ranks, inp.n_nodes, inp.n_ranks / inp.n_nodes
    arch = ARCHS.index(inp.arch)
    collnet = a in (COLLNET_DIRECT, COLLNET_CHAIN)
    if g.n_channels == 0:  # the search found nothing (or was not run): NCCL's zeroed graph
        return 0.0
    bw = g.bw_intra if n_nodes <= 2 or collnet else g.bw_inter
    if a in (NVLS, NVLS_TREE):  # (fewer than 2 channels never get here: see _tune)
        # NVLS bus bandwidth per channel: the switch's efficiency on all but one channel.
        intra = g.bw_intra * rel.nvls_efficiency[arch] * (g.n_channels - 1) / g.n_channels
        intra *= 2.0 if coll == ALL_REDUCE else (ppn - 1) / ppn  # all-reduce pipelines two operations
        inter = g.bw_inter * (2 if n_nodes <= 2 and a == NVLS_TREE else 1)
        bw = min(intra, inter, caps["nvls_tree"] if a == NVLS_TREE else math.inf)
    bus = g.n_channels * bw

    # "Various model refinements", in tuning.cc's order.
    if a == RING and p == LL:
        bus = min(caps["ll"], bus * RING_LL_BW_FACTOR)
    if a == RING and p == LL128:
        bus = min(bus * RING_LL128_BW_FACTOR, g.n_channels * caps["ring_ll128"])
    if a == TREE and coll == ALL_REDUCE:
        bus = min(bus * TREE_ALL_REDUCE_BW_FACTOR, g.n_channels * caps["tree"])
    if a == TREE and p == LL:
        bus = min(bus * TREE_LL_BW_FACTOR, caps["ll"])
    if a == TREE and p == LL128:
        factor = TREE_LL128_BW_FACTOR_ONE_NODE if n_nodes == 1 else TREE_LL128_BW_FACTOR_NODES
        bus = min(bus * factor, g.n_channels * caps["tree_ll128"])
    if a == TREE and inp.tree_pattern == "tree":
        bus *= PLAIN_TREE_PATTERN_FACTOR
    if a == PAT:
        bus *= PAT_BW_FACTOR
    if collnet and p != SIMPLE:
        bus = 0.0
    if a == COLLNET_DIRECT and p == SIMPLE:
        if coll in (ALL_GATHER, REDUCE_SCATTER):
            bus = ppn * min(g.bw_intra, g.bw_inter * COLLNET_DIRECT_NET_FACTOR)
        else:
            # Full speed needs a NIC per GPU: derate by half the GPU/NIC ratio's excess over 1.
            ratio = ppn / g.n_channels
            bus /= ratio - (ratio - 1) / 2
            if ARCH_COMPCAP[inp.arch] >= 90:
                bus *= COLLNET_DIRECT_SM90_FACTOR
    if a in (NVLS, COLLNET_DIRECT) and p == SIMPLE and coll in (ALL_GATHER, REDUCE_SCATTER) and n_nodes > 1:
        # Multi-node all_gather / reduce_scatter on these need the CollNet plugin's own operation
        # and a head (NIC) for every local GPU.
        offered = inp.collnet_all_gather if coll == ALL_GATHER else inp.collnet_reduce_scatter
        if not offered or not inp.collnet_enable or inp.ppn > inp.collnet_heads:
            bus = 0.0

    # Bus bandwidth to algorithm bandwidth (all_gather / reduce_scatter other than Ring keep theirs).
    if not (a != RING and coll in (ALL_GATHER, REDUCE_SCATTER)):
        bus *= n_ranks / _steps(coll, n_ranks) if a in (RING, NVLS, NVLS_TREE) else 0.5
    return bus


def _steps(coll: int, n_ranks: int) -> int:
    if coll == ALL_REDUCE:
        return 2 * (n_ranks - 1)
    return n_ranks - 1 if coll in (ALL_GATHER, REDUCE_SCATTER) else n_ranks


def _latency(coll: int, a: int, p: int, inp: TunerInputs, hw_lat: tuple) -> float:
    """The latency (us) ncclTopoTuneModel stores in comm->latencies."""
    rel, g = inp.release, inp.graph(a)
    n_ranks, n_nodes, ppn = inp.n_ranks, inp.n_nodes, inp.ppn
    intra_hw = HW_NVLINK if g.type_intra == "NVL" else HW_PCI
    lat = rel.base_latency_us[a][p]
    intra_lat = hw_lat[intra_hw][a][p]
    # With one GPU per node the network latency is fully exposed: NCCL uses Tree's NET figure.
    inter_lat = hw_lat[HW_NET][TREE if ppn == 1 else a][p] + g.latency_inter_us
    if p == SIMPLE:
        inter_lat += g.latency_inter_us  # the flush's extra latency
    nsteps = _steps(coll, n_ranks)
    if a == RING:
        step_lat = hw_lat[intra_hw if n_nodes == 1 else HW_NET][a][p]
        if coll in (REDUCE, BROADCAST):
            if g.same_channels:
                return lat + step_lat
            if p == SIMPLE:  # "some chunk latency, waiting for proper chunk modeling"
                step_lat = hw_lat[intra_hw if n_nodes == 1 else HW_NET][TREE][p]
            return lat + nsteps * step_lat
        # Inter-node rings still post every step to the network.
        overhead = 0.0
        if n_nodes > 1:
            overhead = rel.net_overhead_us[CPUS.index(inp.cpu)]
            if p == SIMPLE:
                overhead *= SIMPLE_NET_OVERHEAD_MULTIPLIER
        intra_lat = max(intra_lat, overhead)
        inter_steps = 0 if n_nodes == 1 else 2 * (n_nodes - 1) if coll == ALL_REDUCE else n_nodes - 1
        return lat + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
    if a == TREE:
        if coll == ALL_REDUCE:
            lat += 2 * ((ppn - 1) * intra_lat + _log2i(n_nodes) * inter_lat)
        return lat
    if a == COLLNET_DIRECT:
        return lat + 2 * (min(1, ppn - 1) * intra_lat + (ppn - 1) * COLLNET_DIRECT_ARITY_LATENCY_US) + inter_lat
    if a == COLLNET_CHAIN:
        return lat + 2 * (ppn - 1) * intra_lat + inter_lat
    if a == NVLS:  # NVLS replaces the base latency
        return intra_lat + (inter_lat if n_nodes > 1 else 0.0)
    if a == NVLS_TREE:
        return lat + intra_lat + 2 * _log2i(n_nodes) * inter_lat
    # PAT: a logarithmic network part and a part still linear in the rank count.
    if coll in (ALL_GATHER, REDUCE_SCATTER):
        lat += _log2i(n_nodes) * (inter_lat / PAT_LOG_LATENCY_DIVISOR) + n_ranks * PAT_LINEAR_LATENCY_US
    return lat


def _protocol_enabled(a: int, p: int, inp: TunerInputs) -> bool:
    """tuning.cc: every protocol is on except LL128, which is on by default only where it is safe."""
    if p != LL128:
        return True
    g, cc = inp.graph(a), ARCH_COMPCAP[inp.arch]
    # Hopper and later (NCCL_LL128_C2C=1 default): up to PXN paths to the NIC; before: up to PXB.
    enabled = PATH_TYPES.index(g.type_inter) <= PATH_TYPES.index("PXN" if cc >= 90 else "PXB")
    enabled &= PATH_TYPES.index(g.type_intra) <= PATH_TYPES.index("NVB")
    # (One architecture per job, so the mixed-compute-capability rule holds; the CUDA 11.8 Hopper
    # 2-rank ring exception is not modelled.)
    return enabled


def _algorithm_enabled(a: int, inp: TunerInputs) -> bool:
    """tuning.cc's default algorithm disables."""
    if inp.n_nodes == 1 and a == NVLS_TREE:
        return False
    if not inp.collnet_enable and (a in (COLLNET_DIRECT, COLLNET_CHAIN) or (a == NVLS and inp.n_nodes > 1)):
        return False
    if inp.collnet_enable and a == COLLNET_CHAIN and not inp.collnet_chain_support:
        return False
    return not (a == COLLNET_DIRECT and not inp.nvswitch)


@lru_cache(maxsize=256)
def _tune(inp: TunerInputs) -> tuple[tuple[tuple[tuple[float, float], ...], ...], ...]:
    """[collective][algorithm][protocol] -> (latency us, bandwidth GB/s); bandwidth 0 = not available."""
    rel, n_nodes = inp.release, inp.n_nodes
    arch = ARCHS.index(inp.arch)
    nodes_index = n_nodes - 1 if n_nodes <= 2 else 2
    # LL's cap: by GPU on one node; across nodes by CPU (row 1 for AMD, row 0 otherwise).
    ll_row = arch if n_nodes == 1 else (1 if inp.cpu == "amd" else 0)
    caps = {"ll": rel.ll_max_bw[ll_row][nodes_index],
            "tree": rel.per_channel_max_tree_bw[arch][nodes_index],
            "ring_ll128": rel.per_channel_max_ring_ll128_bw[arch][nodes_index],
            "tree_ll128": rel.per_channel_max_tree_ll128_bw[arch][nodes_index],
            "nvls_tree": rel.per_channel_max_nvls_tree_bw[arch][nodes_index]}
    hw_lat = rel.hw_latency_us
    if inp.cpu == "power":  # de-penalise Tree/Simple over PCI on POWER: Ring's figure
        pci = list(hw_lat[HW_PCI])
        pci[TREE] = (pci[TREE][0], pci[TREE][1], pci[RING][SIMPLE])
        hw_lat = (hw_lat[HW_NVLINK], tuple(pci), hw_lat[HW_NET])

    def entry(coll: int, a: int, p: int) -> tuple[float, float]:
        if inp.n_ranks <= 1 or _skipped(coll, a, p, inp):
            return 0.0, 0.0
        if a in (NVLS, NVLS_TREE) and inp.graph(a).n_channels < 2:  # NVLS needs two channels at least
            return 0.0, 0.0
        bw = _bus_bandwidth(coll, a, p, inp, caps)
        if not (_protocol_enabled(a, p, inp) and _algorithm_enabled(a, inp)):
            bw = 0.0
        return _latency(coll, a, p, inp, hw_lat), bw

    return tuple(tuple(tuple(entry(c, a, p) for p in range(len(PROTOCOLS))) for a in range(len(ALGORITHMS)))
                 for c in range(len(COLLECTIVES)))


def tuning_table(inputs: TunerInputs, collective: str) -> dict[tuple[str, str], tuple[float, float]]:
    """NCCL's latency (us) / bandwidth (GB/s) table for one collective, as its NCCL_DEBUG_SUBSYS=TUNING
    output prints it (bandwidth 0: not available)."""
    table = _tune(inputs)[_index(COLLECTIVES, collective, "collective")]
    return {(a, p): table[i][j] for i, a in enumerate(ALGORITHMS) for j, p in enumerate(PROTOCOLS)}




# ----------------------------------------------------------------------------------------------
# Time and choice: ncclTopoGetAlgoTime, updateCollCostTable, topoGetAlgoInfo.

def _time_us(inp: TunerInputs, coll: int, a: int, p: int, nbytes: int) -> float | None:
    latency, bw = _tune(inp)[coll][a][p]
    if bw == 0:
        return None
    log_size = _log2i(nbytes >> 6)
    if a == TREE and coll == ALL_REDUCE and 0 <= log_size < 23:
        bw *= inp.release.tree_correction[p][log_size]
    if (a == NVLS_TREE and coll == ALL_REDUCE and 0 <= log_size < 24 and ARCH_COMPCAP[inp.arch] >= 100
            and inp.cpu in ("intel", "amd")):
        bw *= inp.release.tree_correction[p][log_size]
    if (a == RING and p == SIMPLE and inp.n_nodes > 1 and coll == ALL_REDUCE
            and nbytes // (inp.comm_channels * inp.n_ranks) >= RING_PLATEAU_MIN_BYTES_PER_CHANNEL_RANK):
        latency *= RING_PLATEAU_FACTOR_VOLTA if ARCH_COMPCAP[inp.arch] < 80 else RING_PLATEAU_FACTOR
    return latency + nbytes / (1000.0 * bw)


def _tried(inp: TunerInputs, coll: int, a: int) -> bool:
    """enqueue.cc, updateCollCostTable: algorithms left out of one call's cost table."""
    if a in (COLLNET_DIRECT, COLLNET_CHAIN) and (not inp.collnet_enable or inp.ppn > NCCL_MAX_DIRECT_ARITY + 1):
        return False
    if a in (NVLS, NVLS_TREE) and (not inp.nvls_support or (coll != ALL_REDUCE and inp.ppn > NCCL_MAX_NVLS_ARITY)):
        return False
    return not (a == NVLS and not inp.collnet_enable and inp.n_nodes > 1)


def predicted_time(inputs: TunerInputs, collective: str, nbytes: int, algorithm: str, protocol: str) -> float | None:
    """NCCL's predicted time in seconds for one collective of nbytes (nccl-tests' "size") with this
    algorithm and protocol; None where NCCL would not run that pair."""
    coll = _index(COLLECTIVES, collective, "collective")
    a = _index(ALGORITHMS, algorithm, "algorithm")
    p = _index(PROTOCOLS, protocol, "protocol")
    if inputs.n_ranks == 1:
        return 0.0 if (a, p) == (RING, SIMPLE) else None
    if not _tried(inputs, coll, a):
        return None
    us = _time_us(inputs, coll, a, p, nbytes)
    return None if us is None else us * 1e-6


def choose(inputs: TunerInputs, collective: str, nbytes: int) -> Choice:
    """The algorithm, protocol, predicted time and channel / thread counts NCCL picks for one call."""
    coll = _index(COLLECTIVES, collective, "collective")
    if nbytes < 0:
        raise ValueError(f"nbytes {nbytes} < 0")
    best: tuple[float, int, int] | None = None
    if inputs.n_ranks == 1:
        best = (0.0, RING, SIMPLE)
    else:
        for a in range(len(ALGORITHMS)):
            if not _tried(inputs, coll, a):
                continue
            for p in range(len(PROTOCOLS)):
                t = _time_us(inputs, coll, a, p, nbytes)
                if t is not None and (best is None or t < best[0]):
                    best = (t, a, p)
    if best is None:
        raise ValueError(f"no algorithm/protocol available for {collective} with these tuner inputs")
    t, a, p = best
    channels, threads = _channels_and_threads(inputs, a, p, nbytes)
    return Choice(ALGORITHMS[a], PROTOCOLS[p], t * 1e-6, channels, threads)


def _max_threads(inp: TunerInputs, a: int, p: int) -> int:
    """tuning.cc, comm->maxThreads (PAT's is never set there, so 0 until topoGetAlgoInfo's fix-up)."""
    if p == SIMPLE:
        if a == RING:
            return 256 if inp.ring.bw_intra * inp.ring.n_channels <= PCI_BW else NCCL_SIMPLE_MAX_NTHREADS
        if a == TREE:
            return NCCL_SIMPLE_MAX_NTHREADS
        return NCCL_MAX_NTHREADS if a in (COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE) else 0
    if a in (RING, TREE):
        return NCCL_LL_MAX_NTHREADS if p == LL else NCCL_LL128_MAX_NTHREADS
    return 0


def _thread_threshold(inp: TunerInputs, a: int, p: int) -> int:
    """tuning.cc, comm->threadThresholds: bytes per thread before adding threads or channels."""
    if a in (COLLNET_DIRECT, COLLNET_CHAIN) and p == SIMPLE:
        return COLLNET_THREAD_THRESHOLD
    threshold = (LL_THREAD_THRESHOLD, LL128_THREAD_THRESHOLD, SIMPLE_THREAD_THRESHOLD)[p]
    return threshold * inp.n_ranks if (a, p) == (RING, LL) else threshold


def _channels_and_threads(inp: TunerInputs, a: int, p: int, nbytes: int) -> tuple[int, int]:
    """enqueue.cc, topoGetAlgoInfo: fewer channels, then fewer threads, for small sizes."""
    nc, nt, threshold = inp.comm_channels, _max_threads(inp, a, p), _thread_threshold(inp, a, p)
    if a == COLLNET_DIRECT:
        switch, short = 16, True
        while switch >= 1 and short:
            while (short := nbytes < nc * nt * inp.collnet_heads * threshold) and nc > switch:
                if nc == switch + switch // 2:
                    threshold //= 2
                nc -= 1
            switch //= 2
    elif a in (NVLS, NVLS_TREE):
        # NVLS should not need more than its own channel count to reach peak bandwidth.
        nc = min(inp.nvls_channels, inp.comm_channels) if inp.n_nodes > 1 and a == NVLS else inp.nvls_channels
    else:
        while nbytes < nc * nt * threshold and nc >= 2:
            nc -= 1
    if a not in (NVLS, NVLS_TREE, COLLNET_DIRECT):
        while nbytes < nc * nt * threshold and nt % 128 == 0:
            nt //= 2
    if p == SIMPLE and a == RING:
        nt += WARP_SIZE  # an extra warp for synchronisation
    if p == SIMPLE and a == TREE:
        nt += 4 * WARP_SIZE  # split thread model
    nt = 3 * WARP_SIZE if nt // WARP_SIZE < 3 else nt
    if a in (TREE, PAT):
        nt = NCCL_MAX_NTHREADS
    return nc, nt
