"""From a machine description to the tuner's inputs: a simplified stand-in for NCCL's topology search
(src/graph/search.cc, topo.h, connect.cc, transport/nvls.cc); tuner_inputs says what it leaves out."""

from __future__ import annotations

import math
from dataclasses import dataclass

from artist.network.nccl.releases import (ARCHS, ARCH_COMPCAP, CPUS, MAXCHANNELS, NCCL_MAX_DIRECT_ARITY,
                                          NCCL_MAX_NVLS_ARITY, NcclRelease, PATH_TYPES, RING_MAX_CHANNELS, V2_30_7,
                                          _index)
from artist.network.nccl.inputs import (GraphInfo, NO_GRAPH, TunerInputs)


# ----------------------------------------------------------------------------------------------
# From a machine description to the tuner's inputs: a simplified topology search.

@dataclass(frozen=True)
class Machine:
    """A homogeneous GPU cluster as NCCL's topology detection would see one node of it.

    Bandwidths are GB/s one way, in NCCL's own accounting: a NIC is its line rate / 8 (NCCL: Mb/s /
    8000; 400 Gb/s -> 50), NVLink is links x NCCL's per-link figure (``nvlink_gbs_of``: an H100's 18
    links are 18 x 20.6 = 370.8), PCIe is lanes x per-lane rate (``pcie_gbs_of``: Gen5 x16 -> 48).
    """

    arch: str
    gpus_per_node: int
    nodes: int = 1
    nics_per_node: int = 0  # NICs the GPUs use (each on a GPU's PCIe switch)
    nic_gbs: float = 0.0  # one NIC
    nvlink_gbs: float = 0.0  # one GPU's NVLink total; 0: GPUs talk over PCIe
    nvswitch: bool = False
    pcie_gbs: float | None = None  # GPU <-> NIC PCIe link; None: the architecture's usual x16 generation
    nvls: bool | None = None  # NVLink SHARP usable; None: yes with an NVSwitch on Hopper or later
    collnet: bool = False  # in-network reduction (SHARP) through a CollNet plugin
    cpu: str = "intel"
    nic_path: str = "PIX"  # GPU to NIC path type: PIX when each NIC shares a PCIe switch with GPUs
    net_latency_us: float = 0.0  # latency the net plugin reports (0 for IB/RoCE)
    net_device_host: bool = True

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise ValueError(f"arch {self.arch!r}: expected one of {ARCHS}")
        if self.gpus_per_node < 1 or self.nodes < 1:
            raise ValueError("gpus_per_node and nodes must be >= 1")
        if self.nodes > 1 and (self.nics_per_node < 1 or self.nic_gbs <= 0):
            raise ValueError("several nodes need nics_per_node >= 1 and nic_gbs > 0")
        if self.nvswitch and self.nvlink_gbs <= 0:
            raise ValueError("an NVSwitch machine needs nvlink_gbs > 0")
        if self.cpu not in CPUS:
            raise ValueError(f"cpu {self.cpu!r}: expected one of {CPUS}")
        if self.nic_path not in PATH_TYPES:
            raise ValueError(f"nic_path {self.nic_path!r}: expected one of {PATH_TYPES}")


# PCIe bandwidth NCCL computes for a x16 link (src/graph/topo.cc, kvDictPciGen x width / 80):
# Gen3 12, Gen4 24, Gen5 48 GB/s; the generation of each architecture's SXM boards (V100 Gen3, A100
# Gen4, H100 Gen5 as NCCL topology dumps show them: PCI[24.0] on A100, PCI[48.0] on H100; Blackwell
# HGX boards assumed Gen5).
_PCIE_GEN_RATE = {3: 60, 4: 120, 5: 240, 6: 480}  # topo.cc kvDictPciGen, 100 Mb/s per lane
_PCIE_DEFAULT = {"volta": 12.0, "ampere": 24.0, "hopper": 48.0, "blackwell": 48.0}


def pcie_gbs_of(generation: int, lanes: int = 16) -> float:
    """NCCL's bandwidth for a PCIe link (topo.cc: width x per-lane rate / 80)."""
    return lanes * _PCIE_GEN_RATE[generation] / 80.0


def nvlink_gbs_of(arch: str, links: int, release: NcclRelease = V2_30_7) -> float:
    """NCCL's bandwidth for a GPU's NVLinks (topo.h, ncclTopoNVLinkBw per link)."""
    return links * release.nvlink_link_gbs[_index(ARCHS, arch, "arch")]


@dataclass(frozen=True)
class _Node:
    """Per-channel capacities the search spends (GB/s one way)."""

    gpus: int
    multi_node: bool
    nics: int
    net_cap: float  # one NIC: min(NIC, its PCIe link)
    intra_cap: float  # one GPU's NVLink (or PCIe without NVLink)
    total_bw: float  # search.cc getTotalBw: max(PCIe, NVLink) of a GPU

    def ring_channels(self, speed: float, max_channels: int) -> int:
        """Channels of this speed that fit: one NIC per channel, and each GPU sends over NVLink
        in every channel but those leaving the node from it (spread evenly)."""
        n = max_channels
        if self.multi_node:
            n = min(n, self.nics * math.floor(self.net_cap / speed + 1e-9))
        while n > 0 and not self.fits_intra(n, speed):
            n -= 1
        return n

    def fits_intra(self, n: int, speed: float) -> bool:
        """n channels of this intra-node speed fit on the busiest GPU's NVLink (or PCIe)."""
        sends = n - n // self.gpus if self.multi_node else n
        return self.gpus == 1 or sends * speed <= self.intra_cap + 1e-6

    def nvls_channels(self, speed: float) -> int:
        """NVLS heads of this speed that fit (search.cc ncclTopoSearchTryNvls): every GPU moves
        one share per channel to and from the switch, the head two."""
        heads = min(self.nics, self.gpus) if self.multi_node else self.gpus
        if self.multi_node and speed > self.net_cap + 1e-9:
            return 0
        n = heads
        while n > 0 and ((n + 1) if n < self.gpus else (self.gpus + 1)) * speed > self.intra_cap + 1e-6:
            n -= 1
        return n


def _first_at_most(speeds: tuple[float, ...], limit: float) -> int:
    i = 0
    while i < len(speeds) - 1 and speeds[i] > limit + 1e-9:
        i += 1
    return i


def _speeds(release: NcclRelease, arch: str, multi_node: bool) -> tuple[float, ...]:
    group = 2 if arch == "blackwell" else 1 if arch == "hopper" else 0
    return (release.speeds_inter if multi_node else release.speeds_intra)[group]


def _first_pass(node: _Node, speeds: tuple[float, ...], i: int, channels_at, most: int,
                more_channels_win: bool = False) -> tuple[int, float]:
    """search.cc's first pass, shared by rings and NVLS: from speeds[i] down, while the next speed is
    > 0.49 x the best found, keep the most channels x speed (with more_channels_win, also any speed that
    gives more channels: NVLS heads); stop at `most` channels or the node's whole bandwidth."""
    n, s = 0, 0.0
    while True:
        found = channels_at(speeds[i])
        if (more_channels_win and found > n) or found * speeds[i] > n * s:
            n, s = found, speeds[i]
        if n == most or n * s >= node.total_bw - 1e-9:
            return n, s
        if i < len(speeds) - 1 and (n == 0 or speeds[i + 1] / s > 0.49):
            i += 1
        else:
            return n, s


def _search_ring(node: _Node, speeds: tuple[float, ...], compcap: int) -> tuple[int, float]:
    """search.cc ncclTopoCompute for the ring pattern, reduced to bandwidth bookkeeping: pass 1 from
    the fastest speed the GPU-NIC path allows down (while the next speed is > 0.49 x the best found),
    keeping the largest channels x speed; ncclTopoDupChannels; pass 2 raising the speed."""
    max_bw = node.net_cap if node.multi_node else node.intra_cap
    i = 0
    while i < len(speeds) - 1 and (speeds[i] > max_bw + 1e-9 or speeds[i] > node.total_bw + 1e-9):
        i += 1
    n, s = _first_pass(node, speeds, i, lambda speed: node.ring_channels(speed, RING_MAX_CHANNELS),
                       RING_MAX_CHANNELS)
    if n == 0:
        return 1, 0.1  # search.cc: no path found, "falling back to simple order" at 0.1 GB/s
    # ncclTopoDupChannels: double fast channels (halving their bandwidth) except Hopper+ at < 50 GB/s.
    if s >= 25.0 and not (compcap > 80 and s < 50.0 and n > 4):
        doubled = min(2 * n, RING_MAX_CHANNELS)
        s /= math.ceil(doubled / n)
        n = doubled
    # Pass 2: try every faster speed with at least as many channels.
    for faster in speeds[:_first_at_most(speeds, s)][::-1]:
        found = node.ring_channels(faster, RING_MAX_CHANNELS)
        if found >= n:
            n, s = found, faster
    return n, s


def _search_tree(node: _Node, speeds: tuple[float, ...], n: int) -> tuple[float, float]:
    """Trees get the ring's channel count (init.cc); pass 1 finds the fastest speed carrying n
    channels, pass 2 raises the intra-node speed while below twice the inter-node one (the tree
    crosses the network half as often on two nodes). Returns (bw_intra, bw_inter)."""
    # search.cc: trees need not return to their first NIC, so NVLink counts ngpus / (ngpus - 1) more.
    total = node.total_bw * (node.gpus / (node.gpus - 1) if node.gpus > 1 else 1.0)
    max_bw = node.net_cap if node.multi_node else node.intra_cap
    i = 0
    while i < len(speeds) - 1 and (speeds[i] > max_bw + 1e-9 or speeds[i] * n > total + 1e-6):
        i += 1
    while i < len(speeds) - 1 and node.ring_channels(speeds[i], n) < n:
        i += 1
    inter = intra = speeds[i]
    while i > 0 and intra < 2 * inter and node.fits_intra(n, speeds[i - 1]):
        i -= 1
        intra = speeds[i]
    return intra, inter


def _search_nvls(node: _Node, speeds: tuple[float, ...]) -> tuple[int, float, float]:
    """search.cc for NVLS: channels are heads (one per GPU on one node, one per NIC with a local GPU
    across nodes); more heads beat more bandwidth. Pass 2 raises the inter-node speed while below
    twice the intra-node one and the NIC allows it. Returns (channels, bw_intra, bw_inter)."""
    max_channels = min(NCCL_MAX_NVLS_ARITY, node.gpus)
    if node.multi_node:
        i = _first_at_most(speeds, node.net_cap)
    else:  # one node: all GPUs must be heads, so the speed must fit gpus channels
        total = node.total_bw * node.gpus / (node.gpus - 1)
        i = 0
        while i < len(speeds) - 1 and (speeds[i] > node.intra_cap or speeds[i] * node.gpus > total + 1e-6):
            i += 1
    def heads(speed: float) -> int:
        found = node.nvls_channels(speed)
        return 0 if not node.multi_node and found < node.gpus else found

    n, s = _first_pass(node, speeds, i, heads, max_channels, more_channels_win=True)
    if n == 0:
        return 0, 0.0, 0.0
    inter, j = s, _first_at_most(speeds, s)
    while j > 0 and inter < 2 * s and (not node.multi_node or speeds[j - 1] <= node.net_cap + 1e-9):
        j -= 1
        inter = speeds[j]
    return n, s, inter


def tuner_inputs(machine: Machine, release: NcclRelease = V2_30_7) -> TunerInputs:
    """What NCCL's topology search would hand its tuner on this machine, simplified.

    The search is replaced by bandwidth bookkeeping on three capacities: a NIC (min of its line rate
    and its PCIe link), a GPU's NVLink total (or its PCIe link without NVLink) and the speed tables
    the search steps through. Assumptions, each a simplification of search.cc:
    - Ring: one channel per NIC at the fastest table speed <= the NIC capacity (two or more if the
      NIC holds several); every GPU sends over NVLink in the channels not leaving the node from it;
      ncclTopoDupChannels and pass 2 as NCCL does them. Without NVSwitch the NVLink total is used
      as if the ring could always use all links (true on NVSwitch, optimistic on partial meshes).
    - Tree: the ring's channel count (init.cc), the fastest speed that carries them, then pass 2's
      raise of bw_intra up to twice bw_inter; the balanced pattern with 2+ GPUs per node, the plain
      one (NCCL forces it) with 1 GPU per node.
    - NVLS: heads as ncclTopoSearchTryNvls counts NVLink use (2 shares on the head, 1 elsewhere);
      one head per NIC across nodes. Pass 2's tree-style bw_intra raise for NVLS is not modelled.
    - CollNet (only if declared): Chain uses the tree's figures, Direct one head per NIC (at most 8)
      at the NIC speed, the plugin offering all_gather and reduce_scatter.
    - Channels: comm->nChannels = 2 x min(ring, tree) (connect.cc), x1.5 with CollNet Chain when
      its bw_intra > bw_inter, x2 on Hopper+ multi-node when ring bw_intra > 45 and fewer than 16
      (connect.cc); the unpack-network doubling and Blackwell's NVLS tree tuning are not modelled.
    - Paths: GPU-GPU NVL with NVLink (else PHB), LOC with one GPU per node; GPU-NIC ``nic_path``;
      sameChannels 0 (what NVSwitch systems print).
    """
    m = machine
    compcap = ARCH_COMPCAP[m.arch]
    multi = m.nodes > 1
    pcie = m.pcie_gbs if m.pcie_gbs is not None else _PCIE_DEFAULT[m.arch]
    intra_cap = m.nvlink_gbs if m.nvlink_gbs > 0 else pcie
    node = _Node(gpus=m.gpus_per_node, multi_node=multi, nics=m.nics_per_node,
                 net_cap=min(m.nic_gbs, pcie) if multi else 0.0,
                 intra_cap=intra_cap if m.gpus_per_node > 1 else math.inf,
                 total_bw=max(pcie, m.nvlink_gbs))
    speeds = _speeds(release, m.arch, multi)
    type_intra = "LOC" if m.gpus_per_node == 1 else "NVL" if m.nvlink_gbs > 0 else "PHB"
    type_inter = m.nic_path if multi else "PIX"  # search.cc: minTypeInter starts at PIX
    latency = m.net_latency_us if multi else 0.0

    def graph(n: int, intra: float, inter: float) -> GraphInfo:
        return GraphInfo(n, intra, inter, type_intra, type_inter, False, latency)

    ring_n, ring_s = _search_ring(node, speeds, compcap)
    ring = graph(ring_n, ring_s, ring_s)
    tree_intra, tree_inter = _search_tree(node, speeds, ring_n)
    tree = graph(ring_n, tree_intra, tree_inter)

    nvls, nvls_channels = NO_GRAPH, 0
    nvls_wanted = m.nvls if m.nvls is not None else (m.nvswitch and compcap >= 90)
    if nvls_wanted and m.nvswitch and compcap >= 90 and m.gpus_per_node > 1:
        n, intra, inter = _search_nvls(node, speeds)
        if n:
            nvls = graph(n, intra, inter)
            nvls_channels = release.nvls_channels[0] if compcap < 100 else release.nvls_channels[2 if multi else 1]

    collnet_direct = collnet_chain = NO_GRAPH
    heads = 0
    if m.collnet and multi:
        collnet_chain = tree
        heads = min(m.nics_per_node, m.gpus_per_node, NCCL_MAX_DIRECT_ARITY + 1)
        net_speed = speeds[_first_at_most(speeds, node.net_cap)]
        collnet_direct = graph(heads, net_speed, net_speed)

    channels = min(MAXCHANNELS, 2 * min(ring_n, tree.n_channels))
    if m.collnet and multi and collnet_chain.bw_intra > collnet_chain.bw_inter and m.gpus_per_node > 1:
        channels = min(MAXCHANNELS, channels + channels // 2)
    if compcap >= 90 and multi and ring.bw_intra > 45.0 and channels < 16:
        channels = min(MAXCHANNELS, 2 * channels)

    return TunerInputs(
        arch=m.arch, n_ranks=m.gpus_per_node * m.nodes, n_nodes=m.nodes, ring=ring, tree=tree, nvls=nvls,
        collnet_direct=collnet_direct, collnet_chain=collnet_chain, coll_channels=channels,
        nvls_channels=nvls_channels, nvls_support=nvls.n_channels > 0, collnet_enable=m.collnet and multi,
        collnet_heads=heads, collnet_all_gather=m.collnet, collnet_reduce_scatter=m.collnet,
        nvswitch=m.nvswitch, cpu=m.cpu, tree_pattern="tree" if m.gpus_per_node == 1 else "balanced",
        net_device_host=m.net_device_host, release=release)
