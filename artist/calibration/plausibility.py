"""Rows of an nccl-tests log that no hardware of the topology can have measured: refused before any fit.

A fitted correction follows whatever the log says, so a row that is physically impossible (a typo, a
mis-parsed unit, a log of another machine) would bend the profile silently. Two rules, on measured
times only, with bounds loose enough that every shipped log of real hardware passes them
(tests/test_calibration_plausibility.py checks every one):

- bus bandwidth above the GPU's ceiling: nccl-tests' bus bandwidth (size / time x the collective's bus
  factor, nccl_tests.BUS_FACTORS) measures the bytes each GPU moves per second if the algorithm were a
  ring. Every byte a GPU sends leaves through its NVLink-class link or its share of a NIC
  (topology.py: machine tier link; rack tier NIC shared by the GPUs that use it), and in-network
  reduction (NVLS, SHARP, CollNet) halves those bytes at most, so no algorithm reaches more than
  2 x (NVLink rate + NIC share) of bus bandwidth. Real logs stay well under it (H100 NVLS ~480 GB/s
  against 2 x (450 + 50) GB/s);
- the time falling more than FALL_RATIO-fold from one size to the next larger one: a larger message
  of the same collective on the same GPUs is never several times faster (the bus bandwidth jumps by more
  than FALL_RATIO beyond the sizes' ratio); latency floors and protocol switches move times by tens of
  percent, not 4x.

Where such rows are known and wanted out, `artist calibrate --allow-impossible` keeps them out of the fit
and the profile records each one with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from artist.calibration.nccl_tests import BUS_FACTORS, NcclTest, SizeRow
from artist.topology import Topology

REDUCTION_GAIN = 2.0  # in-network reduction at most halves the bytes a GPU sends (NVLS / SHARP / CollNet)
FALL_RATIO = 4.0  # a time that falls this many times from one size to the next larger one


@dataclass(frozen=True)
class ImpossibleRow:
    line: int
    size_bytes: int
    reason: str


def bus_ceiling_bytes_per_s(topology: Topology) -> float:
    """REDUCTION_GAIN x (a GPU's machine-tier link + its share of its NIC), bytes/s per direction."""
    nics = topology.nics_per_machine or topology.gpus_per_machine
    nic_share = topology.rack.bandwidth_bps * nics / topology.gpus_per_machine
    return REDUCTION_GAIN * (topology.machine.bandwidth_bps + nic_share) / 8.0


def impossible_rows(topology: Topology, test: NcclTest, rows: Sequence[SizeRow]) -> list[ImpossibleRow]:
    """The rows (sorted by size, each with a time) that break a rule of the module docstring."""
    factor = BUS_FACTORS.get(test.collective or "", lambda n: 1.0)(max(2, test.ranks or 2))
    ceiling = bus_ceiling_bytes_per_s(topology)
    out: dict[int, ImpossibleRow] = {}
    for row in rows:
        busbw = row.size_bytes / (row.time_us * 1e-6) * factor
        if busbw > ceiling:
            out[row.line] = ImpossibleRow(row.line, row.size_bytes, (
                f"bus bandwidth {busbw / 1e9:,.0f} GB/s at {row.size_bytes} B is above what any NCCL algorithm can "
                f"reach on {topology.name} ({ceiling / 1e9:,.0f} GB/s: {REDUCTION_GAIN:g} x a GPU's NVLink and NIC "
                f"share)"))
    for before, row in zip(rows, rows[1:]):
        if row.size_bytes > before.size_bytes and row.time_us * FALL_RATIO < before.time_us and row.line not in out:
            out[row.line] = ImpossibleRow(row.line, row.size_bytes, (
                f"time falls {before.time_us / row.time_us:.1f}x from {before.size_bytes} B "
                f"({before.time_us:g} us) to {row.size_bytes} B ({row.time_us:g} us): a larger message is never "
                f"{FALL_RATIO:g}x faster"))
    return sorted(out.values(), key=lambda r: r.line)
