"""Hand-computed α-β times of every collective kind on conftest's topo_8gpu_machines
(2 racks x 2 machines x 8 GPUs; 300 GB/s NVSwitch ports, 50 GB/s NICs, a rack uplink of
16 x 50 GB/s), written from the figures alone, for the analytical and ns-3 tests.

Cases: one machine ([[8]], GPUs 0-7) and two racks with one machine each ([[8],[8]],
GPUs 0-7 and 16-23). NCCL start-up latency: 8.4 µs per collective, 3.4 µs per NVLink
hop, 14 µs per NIC hop (StartupLatency's defaults). nbytes follows nccl-tests' "size".
"""

from __future__ import annotations

from conftest import (MACHINE_LINK_US, MACHINE_SWITCH_US, NIC_GBPS, NVSWITCH_GBPS, RACK_LINK_US, RACK_SWITCH_US,
                      SPINE_LINK_US, SPINE_SWITCH_US)

BASE, NV_STEP, NET_STEP = 8.4e-6, 3.4e-6, 14.0e-6
NV_BPS = NVSWITCH_GBPS * 1e9 / 8  # bytes per second per direction
NIC_BPS = NIC_GBPS * 1e9 / 8
NV_HOP = NV_STEP + (2 * MACHINE_LINK_US + MACHINE_SWITCH_US) * 1e-6
SPINE_HOP = NET_STEP + (2 * RACK_LINK_US + 2 * SPINE_LINK_US + 2 * RACK_SWITCH_US + SPINE_SWITCH_US) * 1e-6

ONE_MACHINE, TWO_RACKS = [[8]], [[8], [8]]


def expected_seconds(kind: str, shape, nbytes: float) -> float:
    if shape == ONE_MACHINE:
        n = 8
        if kind in ("all_gather", "reduce_scatter"):
            # n-1 ring steps, a chunk of S/n over each GPU's NVSwitch port per step.
            return BASE + (n - 1) * NV_HOP + (n - 1) * (nbytes / n) / NV_BPS
        if kind == "all_to_all":
            # One step: every GPU pushes S/n to each of n-1 peers through its one port.
            return BASE + NV_HOP + (n - 1) * (nbytes / n) / NV_BPS
        if kind == "send_recv":  # GPU 0 -> GPU 1
            return BASE + NV_HOP + nbytes / NV_BPS
    if shape == TWO_RACKS:
        n = 16
        if kind in ("all_gather", "reduce_scatter"):
            # 15 ring steps; each step one chunk S/16 crosses each rack boundary on a 50 GB/s
            # NIC (the 800 GB/s rack uplink is not the bottleneck). A chunk's 15 consecutive
            # hops cross both boundaries: 2 NIC hops + 13 NVLink hops.
            return BASE + 2 * SPINE_HOP + 13 * NV_HOP + (n - 1) * (nbytes / n) / NIC_BPS
        if kind == "all_to_all":
            # Each GPU sends S/16 to 8 GPUs of the other rack over its NIC: S/2 on 50 GB/s
            # (its NVSwitch port carries 7 S/16 at 300 GB/s, the rack uplink 8 x S/2 at
            # 800 GB/s: both faster).
            return BASE + SPINE_HOP + (nbytes / 2) / NIC_BPS
        if kind == "send_recv":  # GPU 0 -> GPU 16, through both NICs and the spine
            return BASE + SPINE_HOP + nbytes / NIC_BPS
    raise ValueError((kind, shape))
