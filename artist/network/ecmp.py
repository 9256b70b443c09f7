"""The ECMP hash of an ``ecmp`` spine: which spine plane a rack-crossing transfer takes.

In a leaf-spine fabric every rack switch has ``topology.spine_ports`` uplink
ports, port k going to spine plane k; a transfer from rack a to rack b leaves
rack a by port k and enters rack b by port k of that rack, k chosen per flow by
a hash of the flow's identity, as switches do for equal-cost paths (ECMP).

The hash, documented so that any result can be reproduced by hand:

    k = crc32(struct.pack("<III", src % R, dst % R, channel)) mod spine_ports

with R = GPUs per rack (so src % R is the sending GPU's position inside its
rack), ``channel`` the NCCL channel (ring) the transfer belongs to, and crc32
the IEEE CRC-32 of zlib (CRC hashes are what switch ASICs use for ECMP; the
exact polynomial and field layout of a given switch is vendor-specific and not
modelled). Hashing rack-relative positions, not global GPU ids, means every
rack switch applies the same function to its own ports, so renumbering racks
is a symmetry of the fabric: placements that differ only in which racks they
use take the same time (network/symmetry.py, the cache keys).

Levels above the spine (topology ``levels`` with ``model: ecmp``) hash the
same fields plus the level number i >= 2, so each level picks its port on its
own (switches of different tiers seed their hash differently):

    k_i = crc32(struct.pack("<IIII", src % R, dst % R, channel, i)) mod ports_i
"""

from __future__ import annotations

import struct
import zlib

from artist.topology import Topology


def ecmp_plane(topology: Topology, src: int, dst: int, channel: int = 0) -> int:
    """Spine plane (uplink port index) of the transfer src -> dst on `channel` (module docstring)."""
    per_rack = topology.gpus_per_rack
    key = struct.pack("<III", src % per_rack, dst % per_rack, channel)
    return zlib.crc32(key) % topology.spine_ports


def ecmp_port(topology: Topology, src: int, dst: int, channel: int, level: int) -> int:
    """Uplink port index into `level` (1: the spine plane, ecmp_plane) of the transfer src -> dst."""
    if level == 1:
        return ecmp_plane(topology, src, dst, channel)
    per_rack = topology.gpus_per_rack
    key = struct.pack("<IIII", src % per_rack, dst % per_rack, channel, level)
    return zlib.crc32(key) % topology.level_ports(level)
