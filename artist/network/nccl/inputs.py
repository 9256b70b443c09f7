"""What NCCL's tuner reads from a communicator (its topology search's graphs, channel counts, what is
enabled) and what it answers (the Choice of algorithm, protocol, channels and threads)."""

from __future__ import annotations

from dataclasses import dataclass

from artist.network.nccl.releases import (ARCHS, CPUS, MAXCHANNELS, NcclRelease, PATH_TYPES, V2_30_7)


# ----------------------------------------------------------------------------------------------
# What the tuner sees.

@dataclass(frozen=True)
class GraphInfo:
    """One topology search result, the fields of NCCL's struct ncclTopoGraph that the tuner reads."""

    n_channels: int
    bw_intra: float  # GB/s per channel inside a node
    bw_inter: float  # GB/s per channel between nodes
    type_intra: str = "NVL"  # PATH_TYPES name: GPU to GPU path (NVL -> NVLink latencies, else PCI)
    type_inter: str = "PIX"  # PATH_TYPES name: GPU to NIC path (decides whether LL128 is on)
    same_channels: bool = False  # all channels use the same GPU order (broadcast/reduce latency)
    latency_inter_us: float = 0.0  # the NIC's reported latency (net plugin property, 0 for IB/RoCE)


NO_GRAPH = GraphInfo(0, 0.0, 0.0)  # a search that was not run: NCCL's zeroed graph


@dataclass(frozen=True)
class TunerInputs:
    """What ncclTopoTuneModel and topoGetAlgoInfo read from the communicator."""

    arch: str  # ARCHS
    n_ranks: int
    n_nodes: int
    ring: GraphInfo
    tree: GraphInfo  # also PAT's graph (init.cc: graphs[NCCL_ALGO_PAT] = treeGraph)
    nvls: GraphInfo = NO_GRAPH  # NVLS and NVLSTree's graph; NO_GRAPH without NVLink SHARP
    collnet_direct: GraphInfo = NO_GRAPH
    collnet_chain: GraphInfo = NO_GRAPH
    coll_channels: int = 0  # comm->nChannels (after connect.cc's duplications); 0: 2 x ring channels
    nvls_channels: int = 0  # comm->nvlsChannels
    nvls_support: bool = False  # NVLink SHARP usable (NVSwitch, Hopper or later, multicast enabled)
    collnet_enable: bool = False  # CollNet (in-network reduction, e.g. SHARP) declared and found
    collnet_chain_support: bool = True
    collnet_heads: int = 0  # comm->collNetHeadsNum
    collnet_all_gather: bool = False  # the CollNet plugin offers iallgather
    collnet_reduce_scatter: bool = False  # ... and ireducescatter
    nvswitch: bool = False  # ncclTopoGetNvsCount > 0
    cpu: str = "intel"  # CPUS: network post overhead, LL cap row, POWER's tree latency
    tree_pattern: str = "balanced"  # "balanced" or "tree": the simpler pattern costs Tree 15 %
    net_device_host: bool = True  # False for device-offloaded networking (e.g. TCPX unpack): no PAT
    release: NcclRelease = V2_30_7

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise ValueError(f"arch {self.arch!r}: expected one of {ARCHS}")
        if self.cpu not in CPUS:
            raise ValueError(f"cpu {self.cpu!r}: expected one of {CPUS}")
        if self.tree_pattern not in ("balanced", "tree"):
            raise ValueError(f"tree_pattern {self.tree_pattern!r}: expected 'balanced' or 'tree'")
        if self.n_ranks < 1 or self.n_nodes < 1 or self.n_ranks % self.n_nodes:
            raise ValueError(f"{self.n_ranks} ranks on {self.n_nodes} nodes: need the same GPU count per node")
        for g in (self.ring, self.tree, self.nvls, self.collnet_direct, self.collnet_chain):
            for path in (g.type_intra, g.type_inter):
                if path not in PATH_TYPES:
                    raise ValueError(f"path type {path!r}: expected one of {PATH_TYPES}")

    @property
    def ppn(self) -> int:
        return self.n_ranks // self.n_nodes

    @property
    def comm_channels(self) -> int:
        return self.coll_channels or min(MAXCHANNELS, 2 * self.ring.n_channels)

    def graph(self, algorithm: int) -> GraphInfo:
        """init.cc: graphs[] = {tree, ring, collnetDirect, collnetChain, nvls, nvls, tree}."""
        return (self.tree, self.ring, self.collnet_direct, self.collnet_chain, self.nvls, self.nvls,
                self.tree)[algorithm]


@dataclass(frozen=True)
class Choice:
    algorithm: str
    protocol: str
    seconds: float  # NCCL's predicted time
    channels: int  # nMaxChannels topoGetAlgoInfo sets (CTAs the kernel runs on)
    threads: int  # threads per channel (nWarps x 32)
